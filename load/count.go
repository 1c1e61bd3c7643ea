package load

// Count returns how many files Walk would read under roots, without
// reading them: ingestion uses it for progress and ETA.
func (l *Loader) Count(roots []string) (int, error) {
	n := 0
	for _, r := range roots {
		files, err := l.list(r)
		if err != nil {
			return 0, err
		}
		n += len(files)
	}
	return n, nil
}
