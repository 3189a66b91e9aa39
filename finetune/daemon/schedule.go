package daemon

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Hours is the daily window of local time in which the daemon works, from the hour From
// up to (not including) the hour To; a window that wraps midnight ("22-7") is a night. The
// zero value is every hour.
type Hours struct {
	From, To int
	set      bool
}

// ParseHours reads "FROM-TO" in whole hours of local time, 0 to 24: "22-7" is 22:00 to
// 07:00, "9-17" office hours, "0-24" (or "") always.
func ParseHours(s string) (Hours, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Hours{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	from, err1 := strconv.Atoi(strings.TrimSpace(a))
	to, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || from < 0 || from > 24 || to < 0 || to > 24 {
		return Hours{}, fmt.Errorf("hours %q: want FROM-TO in whole hours from 0 to 24, e.g. 22-7 for nights", s)
	}
	from, to = from%24, to%24
	if from == to {
		if a, b := strings.TrimSpace(a), strings.TrimSpace(b); (a == "0" || a == "24") && (b == "0" || b == "24") && a != b {
			return Hours{}, nil // 0-24: always
		}
		return Hours{}, fmt.Errorf("hours %q: the window is empty; leave --hours out (or 0-24) to work at any hour", s)
	}
	return Hours{From: from, To: to, set: true}, nil
}

// Always says the window is every hour.
func (h Hours) Always() bool { return !h.set }

func (h Hours) String() string {
	if !h.set {
		return "0-24"
	}
	return fmt.Sprintf("%d-%d", h.From, h.To)
}

// Allows says whether t is inside the window.
func (h Hours) Allows(t time.Time) bool {
	if !h.set {
		return true
	}
	hr := t.Hour()
	if h.From < h.To {
		return hr >= h.From && hr < h.To
	}
	return hr >= h.From || hr < h.To
}

// Next is when the window next opens at or after t (t itself when it is open).
func (h Hours) Next(t time.Time) time.Time {
	if h.Allows(t) {
		return t
	}
	open := time.Date(t.Year(), t.Month(), t.Day(), h.From, 0, 0, 0, t.Location())
	if !open.After(t) {
		open = time.Date(t.Year(), t.Month(), t.Day()+1, h.From, 0, 0, 0, t.Location())
	}
	return open
}
