//go:build race

package typesense_test

const raceEnabled = true
