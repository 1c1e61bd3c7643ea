package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/quarry-rag/quarry/store"
)

// testSettings checks collection settings: unset reads as nil, a value
// reads back as the same JSON, a put replaces, nil deletes, collections
// are isolated, Settings lists them all, an unknown collection is named, a bad key or value is
// refused, and dropping a collection drops its settings.
func testSettings(t *testing.T, s *store.Store) {
	c := mustCollection(t, s, "kb", 3)
	other := mustCollection(t, s, "other", 3)
	if _, err := c.Setting(ctx(t), "calibration"); errors.Is(err, store.ErrUnsupported) {
		t.Skip("this store keeps no collection settings")
	}
	same := func(t *testing.T, got json.RawMessage, want string) {
		t.Helper()
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("value %q is not JSON: %v", got, err)
		}
		_ = json.Unmarshal([]byte(want), &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("value: got %s, want %s", got, want)
		}
	}
	get := func(t *testing.T, c *store.Collection, key string) json.RawMessage {
		t.Helper()
		v, err := c.Setting(ctx(t), key)
		if err != nil {
			t.Fatalf("setting %s: %v", key, err)
		}
		return v
	}
	if v := get(t, c, "calibration"); v != nil {
		t.Fatalf("a new collection has a setting: %s", v)
	}
	put := func(t *testing.T, c *store.Collection, key, v string) {
		t.Helper()
		var raw json.RawMessage
		if v != "" {
			raw = json.RawMessage(v)
		}
		if err := c.PutSetting(ctx(t), key, raw); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	put(t, c, "calibration", `{"choice": {"name": "keyword"}, "scores": [1, 2.5], "text": "café \"quoted\""}`)
	same(t, get(t, c, "calibration"), `{"choice": {"name": "keyword"}, "scores": [1, 2.5], "text": "café \"quoted\""}`)
	if v := get(t, other, "calibration"); v != nil {
		t.Errorf("a setting leaked into another collection: %s", v)
	}
	put(t, c, "calibration", `{"choice": {"name": "hybrid"}}`)
	same(t, get(t, c, "calibration"), `{"choice": {"name": "hybrid"}}`)
	put(t, c, "other.key", `3`)
	put(t, c, "calibration", "")
	if v := get(t, c, "calibration"); v != nil {
		t.Errorf("a deleted setting reads back: %s", v)
	}
	same(t, get(t, c, "other.key"), `3`)
	put(t, c, "calibration", "") // deleting what is not there is no error
	put(t, other, "x", `true`)
	all, err := c.Settings(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all["other.key"] == nil {
		t.Errorf("settings: %v, want other.key alone", all)
	}
	same(t, all["other.key"], `3`)

	for _, tc := range []struct {
		key, value string
	}{
		{"Calibration", `1`},
		{"", `1`},
		{"bad key", `1`},
		{"calibration", `{not json`},
		{"calibration", `"` + string(make([]byte, store.MaxSettingBytes)) + `"`},
	} {
		if err := c.PutSetting(ctx(t), tc.key, json.RawMessage(tc.value)); !errors.Is(err, store.ErrInvalidRequest) {
			t.Errorf("put %q=%.20q: got %v, want ErrInvalidRequest", tc.key, tc.value, err)
		}
	}

	if err := s.DropCollection(ctx(t), "kb"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Setting(ctx(t), "other.key"); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("setting of a dropped collection: %v", err)
	}
	if _, err := c.Settings(ctx(t)); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("settings of a dropped collection: %v", err)
	}
	if err := c.PutSetting(ctx(t), "other.key", json.RawMessage(`1`)); !errors.Is(err, store.ErrCollectionNotFound) {
		t.Errorf("put into a dropped collection: %v", err)
	}
	c = mustCollection(t, s, "kb", 3)
	if v := get(t, c, "other.key"); v != nil {
		t.Errorf("a recreated collection has its predecessor's setting: %s", v)
	}
}
