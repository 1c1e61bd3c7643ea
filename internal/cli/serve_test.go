package cli_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quarry-rag/quarry/internal/cli"
)

func TestKeysCommands(t *testing.T) {
	kb := filepath.Join(t.TempDir(), "kb")
	if code, _, errOut := run(t, "", "init", "--kb", kb); code != 0 {
		t.Fatalf("init: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"keys", "create", "--kb", kb, "--permission", "root"}, 2, "not one of read, write, admin"},
		{[]string{"keys", "create", "--kb", kb, "--filter", "tenant ="}, 2, "filter"},
		{[]string{"keys", "revoke", "--kb", kb, "nope"}, 2, "no key has id"},
		{[]string{"keys", "list", "--kb", kb}, 0, "No keys"},
	} {
		code, out, errOut := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: %d %q %q", tc.args, code, out, errOut)
		}
	}
	code, token, errOut := run(t, "", "keys", "create", "--kb", kb, "--name", "acme", "--permission", "write", "--filter", "tenant = 'acme'", "--collection", "handbook")
	if code != 0 || !strings.HasPrefix(token, "qk_") || !strings.Contains(errOut, "shown once") {
		t.Fatalf("create: %d %q %q", code, token, errOut)
	}
	id := strings.Fields(errOut)[2]
	code, out, _ := run(t, "", "keys", "list", "--kb", kb)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, `{"operator":"eq","field":"tenant","value":"acme"}`) || !strings.Contains(out, "active") || strings.Contains(out, strings.TrimSpace(token)) {
		t.Fatalf("list: %d %s", code, out)
	}
	if code, _, errOut := run(t, "", "keys", "revoke", "--kb", kb, id); code != 0 {
		t.Fatalf("revoke: %d %s", code, errOut)
	}
	if _, out, _ := run(t, "", "keys", "list", "--kb", kb); !strings.Contains(out, "revoked") {
		t.Fatalf("list after revoke: %s", out)
	}
}

// TestServe starts `quarry serve` without keys (loopback, said so) and
// with a key (requests need it), then stops it by cancelling.
func TestServe(t *testing.T) {
	kb := filepath.Join(t.TempDir(), "kb")
	if code, _, errOut := run(t, "", "init", "--kb", kb); code != 0 {
		t.Fatalf("init: %d %s", code, errOut)
	}
	serve := func(t *testing.T, key string) string {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var errOut lockedBuffer
		done := make(chan int, 1)
		go func() {
			done <- cli.Run(ctx, []string{"serve", "--kb", kb, "--addr", net.JoinHostPort("0.0.0.0", strconv.Itoa(port))}, cli.IO{In: strings.NewReader(""), Out: io.Discard, Err: &errOut})
		}()
		defer func() {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("serve exited %d: %s", code, errOut.String())
				}
			case <-time.After(20 * time.Second):
				t.Error("serve did not stop")
			}
		}()
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		deadline := time.Now().Add(20 * time.Second)
		for {
			resp, err := http.Get(base + "/healthz")
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve did not come up: %v: %s", err, errOut.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		req, _ := http.NewRequest("GET", base+"/v1/status", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status with key %v: %d", key != "", resp.StatusCode)
		}
		if key != "" {
			resp, err := http.Get(base + "/v1/status")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("status without a key: %d", resp.StatusCode)
			}
		}
		return errOut.String()
	}
	if logs := serve(t, ""); !strings.Contains(logs, "no API keys: serving on 127.0.0.1:") {
		t.Errorf("no loopback notice: %s", logs)
	}
	_, token, _ := run(t, "", "keys", "create", "--kb", kb, "--permission", "read")
	token = strings.TrimSpace(token)
	if logs := serve(t, token); strings.Contains(logs, "loopback") || strings.Contains(logs, token) {
		t.Errorf("serve with a key logged: %s", logs)
	}
}
