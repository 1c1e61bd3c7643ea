//go:build race

package scifacttest

const raceEnabled = true
