//go:build race

package rag_test

// raceEnabled lets the corpus test skip under the race detector, which
// slows the manual's parsing tenfold.
const raceEnabled = true
