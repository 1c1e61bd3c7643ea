//go:build race

package quarry_test

// raceEnabled lets the corpus tests skip under the race detector, which
// slows the manual's parsing tenfold.
const raceEnabled = true
