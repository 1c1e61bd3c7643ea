package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
)

// MaxSettingBytes bounds one setting's value: settings are small records
// (a calibration's figures), never documents.
const MaxSettingBytes = 64 << 10

var settingKeyRE = regexp.MustCompile(`\A[a-z][a-z0-9_.-]{0,63}\z`)

// SettingsKeeper is implemented by backends that keep a collection's
// settings: small JSON values by key that Quarry learns about a
// collection after it is made (its calibrated search default), unlike
// CollectionConfig, which is fixed at creation. Dropping a collection
// drops its settings.
type SettingsKeeper interface {
	// Setting returns the value under key, nil when there is none;
	// ErrCollectionNotFound for an unknown collection.
	Setting(ctx context.Context, coll, key string) (json.RawMessage, error)
	// PutSetting replaces the value under key; a nil value deletes it.
	PutSetting(ctx context.Context, coll, key string, value json.RawMessage) error
	// Settings returns every setting of the collection by key (what a
	// copy carries to another store); empty when it has none.
	Settings(ctx context.Context, coll string) (map[string]json.RawMessage, error)
}

// Setting returns the collection's setting under key, nil when unset, or
// ErrUnsupported when the store keeps no settings.
func (c *Collection) Setting(ctx context.Context, key string) (json.RawMessage, error) {
	sk, err := c.settings(key)
	if err != nil {
		return nil, err
	}
	v, err := sk.Setting(ctx, c.cfg.Name, key)
	if err != nil {
		return nil, fmt.Errorf("collection %q: setting %s: %w", c.cfg.Name, key, err)
	}
	return v, nil
}

// PutSetting records the collection's setting under key; a nil value
// removes it. The value must be JSON of at most MaxSettingBytes.
func (c *Collection) PutSetting(ctx context.Context, key string, value json.RawMessage) error {
	sk, err := c.settings(key)
	if err != nil {
		return err
	}
	if value != nil && (!json.Valid(value) || len(value) > MaxSettingBytes) {
		return fmt.Errorf("%w: setting %s must be JSON of at most %d bytes", ErrInvalidRequest, key, MaxSettingBytes)
	}
	if err := sk.PutSetting(ctx, c.cfg.Name, key, value); err != nil {
		return fmt.Errorf("collection %q: setting %s: %w", c.cfg.Name, key, err)
	}
	return nil
}

func (c *Collection) settings(key string) (SettingsKeeper, error) {
	if !settingKeyRE.MatchString(key) {
		return nil, fmt.Errorf("%w: setting key %q must be 1-64 lowercase letters, digits, '_', '.' or '-', starting with a letter", ErrInvalidRequest, key)
	}
	sk, ok := c.s.b.(SettingsKeeper)
	if !ok {
		return nil, fmt.Errorf("%w: this store keeps no collection settings", ErrUnsupported)
	}
	return sk, nil
}

// Settings returns every setting of the collection by key, or
// ErrUnsupported when the store keeps none.
func (c *Collection) Settings(ctx context.Context) (map[string]json.RawMessage, error) {
	sk, ok := c.s.b.(SettingsKeeper)
	if !ok {
		return nil, fmt.Errorf("%w: this store keeps no collection settings", ErrUnsupported)
	}
	m, err := sk.Settings(ctx, c.cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("collection %q: settings: %w", c.cfg.Name, err)
	}
	return m, nil
}

// KeepsSettings reports whether the collection's store keeps settings.
func (c *Collection) KeepsSettings() bool {
	_, ok := c.s.b.(SettingsKeeper)
	return ok
}
