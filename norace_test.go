//go:build !race

package quarry_test

const raceEnabled = false
