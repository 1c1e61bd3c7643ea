package weaviate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// settingsClass keeps store.SettingsKeeper values: one object per
// collection and key, its id derived from both, so a put replaces it.
func (b *Backend) settingsClass() string { return b.opts.Prefix + "Settings" }

func (b *Backend) settingsClassDef() map[string]any {
	return b.classDef(b.settingsClass(), []map[string]any{
		textProp("coll", "field", true, false),
		textProp("key", "field", true, false),
		textProp("body", "", false, false),
	}, false)
}

func (b *Backend) settingID(coll, key string) string {
	return objectID(b.opts.Prefix, "setting", coll, key)
}

// Setting implements store.SettingsKeeper. Searches read it, so the
// collection is checked in the backend's cache, as every read does: a hit
// costs one request.
func (b *Backend) Setting(ctx context.Context, coll, key string) (json.RawMessage, error) {
	if _, err := b.get(ctx, coll); err != nil {
		return nil, err
	}
	var obj struct {
		Properties struct {
			Body string `json:"body"`
		} `json:"properties"`
	}
	path := "/objects/" + url.PathEscape(b.settingsClass()) + "/" + b.settingID(coll, key)
	err := b.c.do(ctx, http.MethodGet, path, b.consistency(), nil, &obj)
	if isStatus(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return json.RawMessage(obj.Properties.Body), nil
}

// PutSetting implements store.SettingsKeeper.
func (b *Backend) PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error {
	if _, err := b.get(ctx, coll); err != nil {
		return err
	}
	if value == nil {
		return b.deleteObject(ctx, b.settingsClass(), b.settingID(coll, key))
	}
	return b.putObjects(ctx, []object{{Class: b.settingsClass(), ID: b.settingID(coll, key),
		Properties: map[string]any{"coll": coll, "key": key, "body": string(value)}}})
}

// Settings implements store.SettingsKeeper.
func (b *Backend) Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error) {
	if _, err := b.get(ctx, coll); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	w := where{"path": []any{"coll"}, "operator": "Equal", "valueText": coll}
	err := b.sorted(ctx, b.settingsClass(), w, "key", "body", func(rows []map[string]json.RawMessage) error {
		for _, r := range rows {
			out[text(r, "key")] = json.RawMessage(text(r, "body"))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
