package store

import (
	"encoding/json"
	"testing"
	"time"
)

func TestEncodeTurnRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, in := range []Turn{
		{Seq: 7, Role: "assistant", Content: "Money back [1].", Data: json.RawMessage(`{"z": 1, "a":[1]}`), Created: at},
		{Role: "user", Content: "x", Created: at},
	} {
		b, err := EncodeTurn(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeTurn(b)
		if err != nil {
			t.Fatal(err)
		}
		if out.Seq != 0 || out.Role != in.Role || out.Content != in.Content || !out.Created.Equal(in.Created) || string(out.Data) != string(in.Data) || (in.Data == nil) != (out.Data == nil) {
			t.Errorf("%+v came back as %+v", in, out)
		}
	}
}

func TestTurnOrderGrows(t *testing.T) {
	var o TurnOrder
	prev := ""
	for range 1000 {
		k, err := o.Next()
		if err != nil {
			t.Fatal(err)
		}
		if k <= prev {
			t.Fatalf("key %s after %s", k, prev)
		}
		prev = k
	}
}
