package cputime

import "testing"

func TestSelfCountsWork(t *testing.T) {
	before := Self()
	// Spin until the clock the system keeps for this process moves: the
	// loop ends on an observed change, however loaded the machine is.
	x := 0
	for Self() == before {
		for i := range 1_000_000 {
			x += i
		}
	}
	if after := Self(); after <= before {
		t.Errorf("Self() = %v after work, want more than %v (x=%d)", after, before, x)
	}
}
