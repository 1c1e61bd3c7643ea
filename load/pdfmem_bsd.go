//go:build unix && !linux

package load

const mapNoReserve = 0
