package daemon

import (
	"testing"
	"time"
)

func TestParseHours(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" an error, "0-24" always
	}{
		{"", "0-24"}, {"0-24", "0-24"}, {"24-0", "0-24"}, {"22-7", "22-7"}, {" 9 - 17 ", "9-17"}, {"23-24", "23-0"},
		{"7-7", ""}, {"25-3", ""}, {"-1-3", ""}, {"22", ""}, {"a-b", ""}, {"0-0", ""},
	} {
		h, err := ParseHours(c.in)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("ParseHours(%q) = %v, want an error", c.in, h)
		case c.want != "" && (err != nil || h.String() != c.want):
			t.Errorf("ParseHours(%q) = %v, %v; want %s", c.in, h, err, c.want)
		}
	}
}

func TestHoursDecision(t *testing.T) {
	at := func(day, hour, minute int) time.Time { return time.Date(2026, 12, day, hour, minute, 0, 0, time.UTC) }
	night, _ := ParseHours("22-7")
	office, _ := ParseHours("9-17")
	always, _ := ParseHours("")
	for _, c := range []struct {
		h    Hours
		t    time.Time
		ok   bool
		next time.Time
	}{
		{night, at(2, 23, 0), true, at(2, 23, 0)},
		{night, at(2, 0, 30), true, at(2, 0, 30)},
		{night, at(2, 6, 59), true, at(2, 6, 59)},
		{night, at(2, 7, 0), false, at(2, 22, 0)},
		{night, at(2, 21, 59), false, at(2, 22, 0)},
		{office, at(2, 8, 0), false, at(2, 9, 0)},
		{office, at(2, 9, 0), true, at(2, 9, 0)},
		{office, at(2, 17, 0), false, at(3, 9, 0)},
		{office, at(31, 18, 0), false, time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)},
		{always, at(2, 3, 0), true, at(2, 3, 0)},
	} {
		if got := c.h.Allows(c.t); got != c.ok {
			t.Errorf("%v.Allows(%v) = %v", c.h, c.t, got)
		}
		if got := c.h.Next(c.t); !got.Equal(c.next) {
			t.Errorf("%v.Next(%v) = %v, want %v", c.h, c.t, got, c.next)
		}
	}
}
