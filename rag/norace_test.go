//go:build !race

package rag_test

const raceEnabled = false
