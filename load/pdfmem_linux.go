package load

import "syscall"

// mapNoReserve keeps the reservation from counting against overcommit.
const mapNoReserve = syscall.MAP_NORESERVE
