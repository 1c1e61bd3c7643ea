package load

import "golang.org/x/sys/unix"

// mapNoReserve keeps the reservation from counting against overcommit.
const mapNoReserve = unix.MAP_NORESERVE
