//go:build race

package load

// raceEnabled: the race detector multiplies memory and slows the pure-Go
// compression the bomb tests build their inputs with.
const raceEnabled = true
