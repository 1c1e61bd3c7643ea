//go:build race

package eval_test

// raceEnabled lets the calibration test on BEIR skip under the race
// detector, which slows indexing two corpora tenfold; CI runs it without.
const raceEnabled = true
