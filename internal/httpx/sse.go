package httpx

import (
	"bufio"
	"bytes"
	"io"
	"iter"
)

// maxEventSize bounds one server-sent event's data.
const maxEventSize = 4 << 20

// Events reads server-sent events and yields each event's data (its "data:"
// lines joined by newlines). Comments, other fields and events without data
// are skipped; a "[DONE]" sentinel, as OpenAI-style APIs send, is yielded
// like any other data.
func Events(r io.Reader) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxEventSize)
		var data []byte
		has := false
		for sc.Scan() {
			line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
			if len(line) == 0 {
				if has && !yield(data, nil) {
					return
				}
				data, has = nil, false
				continue
			}
			v, ok := bytes.CutPrefix(line, []byte("data:"))
			if !ok {
				continue
			}
			v = bytes.TrimPrefix(v, []byte(" "))
			if has {
				data = append(data, '\n')
			}
			data = append(data, v...)
			has = true
		}
		if err := sc.Err(); err != nil {
			yield(nil, err)
			return
		}
		if has {
			yield(data, nil)
		}
	}
}
