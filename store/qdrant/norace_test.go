//go:build !race

package qdrant_test

const raceEnabled = false
