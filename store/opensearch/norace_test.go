//go:build !race

package opensearch_test

const raceEnabled = false
