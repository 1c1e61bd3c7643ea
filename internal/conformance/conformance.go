// Package conformance loads the shared conformance cases (input → expected,
// SEMANTICS.md) and runs them as table tests with a list of deliberate
// differences that cannot rot: a listed case that starts passing fails the
// run, and so does an unlisted case that fails.
package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// Case is one conformance case.
type Case struct {
	Area     string          `json:"area"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
	Source   string          `json:"source"`
}

// Decode unmarshals the case's input and expected parts.
func (c Case) Decode(in, expected any) error {
	if in != nil {
		if err := json.Unmarshal(c.Input, in); err != nil {
			return fmt.Errorf("input: %w", err)
		}
	}
	if expected != nil {
		if err := json.Unmarshal(c.Expected, expected); err != nil {
			return fmt.Errorf("expected: %w", err)
		}
	}
	return nil
}

// Difference is a case Quarry deliberately decides otherwise, with the
// SEMANTICS sentence the decision follows.
type Difference struct {
	Area      string `json:"area"`
	Name      string `json:"name"`
	Semantics string `json:"semantics"`
}

// seedPath finds the cases: the shared copy beside the repository when it
// is there (the newest), else the copy kept in this package's testdata.
func seedPath() string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	shared := filepath.Join(dir, "..", "..", "..", "shared", "conformance", "seed_cases.json")
	if _, err := os.Stat(shared); err == nil {
		return shared
	}
	return filepath.Join(dir, "testdata", "seed_cases.json")
}

// Load returns the cases of the given areas, in file order.
func Load(t testing.TB, areas ...string) []Case {
	t.Helper()
	b, err := os.ReadFile(seedPath())
	if err != nil {
		t.Fatalf("conformance cases: %v", err)
	}
	var all []Case
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatalf("conformance cases: %v", err)
	}
	want := map[string]bool{}
	for _, a := range areas {
		want[a] = true
	}
	var out []Case
	for _, c := range all {
		if want[c.Area] {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no conformance cases for areas %v", areas)
	}
	return out
}

// LoadDifferences reads a JSON list of Difference from path. A missing file
// is an empty list. Every entry must give its SEMANTICS sentence.
func LoadDifferences(t testing.TB, path string) map[string]Difference {
	t.Helper()
	out := map[string]Difference{}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatalf("differences: %v", err)
	}
	var list []Difference
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("differences %s: %v", path, err)
	}
	for _, d := range list {
		if strings.TrimSpace(d.Semantics) == "" {
			t.Fatalf("difference %q lists no SEMANTICS sentence", d.Name)
		}
		out[d.Area+"\x00"+d.Name] = d
	}
	return out
}

// Check is what a test runs for one case (or one sub-case): nil when Quarry
// behaves as the case expects.
type Check func(c Case) []Result

// Result is the outcome of one case or sub-case. Sub is empty for a whole
// case, or names the element of an "each"-style case.
type Result struct {
	Sub string
	Err error
}

// Pass is a passing whole-case result.
func Pass() []Result { return []Result{{}} }

// Fail is a failing whole-case result.
func Fail(format string, args ...any) []Result {
	return []Result{{Err: fmt.Errorf(format, args...)}}
}

// Of turns an error into a whole-case result.
func Of(err error) []Result { return []Result{{Err: err}} }

// Run runs check on every case. A failure not listed in diffs fails the
// test; so does a listed case that passes, and a listed case that does not
// exist.
func Run(t *testing.T, cases []Case, diffs map[string]Difference, check Check) {
	t.Helper()
	used := map[string]bool{}
	for _, c := range cases {
		t.Run(c.Area+"/"+c.Name, func(t *testing.T) {
			for _, r := range check(c) {
				name := c.Name
				if r.Sub != "" {
					name += "/" + r.Sub
				}
				key := c.Area + "\x00" + name
				d, listed := diffs[key]
				used[key] = true
				switch {
				case r.Err != nil && !listed:
					t.Errorf("%s: %v", name, r.Err)
				case r.Err == nil && listed:
					t.Errorf("%s passes but is listed as a deliberate difference (%s): remove it from the list", name, d.Semantics)
				case r.Err != nil && listed:
					t.Logf("%s: deliberate difference (%s): %v", name, d.Semantics, r.Err)
				}
			}
		})
	}
	var stale []string
	for k := range diffs {
		if !used[k] {
			stale = append(stale, strings.ReplaceAll(k, "\x00", "/"))
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		t.Errorf("difference %q matches no case: remove it", k)
	}
}

var quoted = regexp.MustCompile(`"([^"]+)"`)

// NamesQuoted checks that msg mentions every name the expected message
// quotes: Quarry writes its own messages, but each must name the field,
// operator or value at fault.
func NamesQuoted(expected, msg string) error {
	for _, m := range quoted.FindAllStringSubmatch(expected, -1) {
		if !strings.Contains(msg, m[1]) {
			return fmt.Errorf("message %q does not name %q (expected message: %q)", msg, m[1], expected)
		}
	}
	return nil
}

// ExpectedError is the error part of an expected block.
type ExpectedError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Match   string `json:"match"`
}

// SameJSON compares two JSON texts by value: key order and number
// spelling aside.
func SameJSON(got, want []byte) error {
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Errorf("got %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Errorf("want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Errorf("got %s, want %s", got, want)
	}
	return nil
}
