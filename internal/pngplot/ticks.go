package pngplot

import (
	"math"
	"strconv"
)

// NiceTicks spans lo to hi with about n ticks at round steps (1, 2 or 5 times a power of
// ten), every one labelled, and returns the range widened to the first and last tick so
// that the data end on a labelled line. The labels have as many decimals as the step.
func NiceTicks(lo, hi float64, n int) (tlo, thi float64, ticks []Tick) {
	if !(hi > lo) {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / float64(max(n-1, 1)))
	first, last := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	for k := first; k <= last; k++ {
		// k*step, not a running sum, so that 0.6 is 0.6 and not 0.6000000000000001.
		v, _ := strconv.ParseFloat(strconv.FormatFloat(k*step, 'f', decimals, 64), 64)
		ticks = append(ticks, Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ticks[0].Value, ticks[len(ticks)-1].Value, ticks
}

// niceStep is the round step nearest rough: 1, 2, 5 or 10 times a power of ten.
func niceStep(rough float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(rough)))
	switch f := rough / mag; {
	case f < 1.5:
		return mag
	case f < 3:
		return 2 * mag
	case f < 7:
		return 5 * mag
	default:
		return 10 * mag
	}
}

// IntegerTicks marks each whole number from lo to hi (iterations, steps) and labels every
// one, or every second, fifth, … when there are too many to read: at most about a dozen
// labels, on multiples of the labelling step. Past a labelling step of 5 only the labelled
// numbers are marked.
func IntegerTicks(lo, hi float64) []Tick {
	first, last := int(math.Ceil(lo)), int(math.Floor(hi))
	every := 1
	for _, e := range []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000} {
		every = e
		if (last-first)/e+1 <= 12 {
			break
		}
	}
	var ticks []Tick
	for i := first; i <= last; i++ {
		t := Tick{Value: float64(i)}
		if i%every == 0 {
			t.Label = strconv.Itoa(i)
		} else if every > 5 {
			continue // a short mark at each of hundreds of numbers would be a bar
		}
		ticks = append(ticks, t)
	}
	return ticks
}
