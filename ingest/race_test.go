//go:build race

package ingest_test

// raceEnabled lets the heaviest corpus test skip under the race detector,
// which slows CPU-bound parsing tenfold; CI runs it in the plain pass.
const raceEnabled = true
