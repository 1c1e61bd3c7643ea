package load

import (
	"bufio"
	"bytes"
	"path"
	"strings"
)

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	base     string // directory of the .gitignore, relative to the walk root ("" at the root)
	pattern  string
	negate   bool
	dirOnly  bool
	anchored bool // contains a slash before its end: matched against the path from base
}

// parseGitignore reads the rules of one .gitignore in directory base.
func parseGitignore(base string, data []byte) []ignoreRule {
	var rules []ignoreRule
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{base: base}
		if strings.HasPrefix(line, `\#`) || strings.HasPrefix(line, `\!`) {
			line = line[1:]
		} else if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimSuffix(line, "/")
		}
		if strings.Contains(line, "/") {
			r.anchored = true
			line = strings.TrimPrefix(line, "/")
		}
		if line == "" {
			continue
		}
		r.pattern = line
		rules = append(rules, r)
	}
	return rules
}

// ignored reports whether rel (slash-separated, relative to the walk root)
// is ignored by rules; the last matching rule wins, as in git.
func ignored(rules []ignoreRule, rel string, isDir bool) bool {
	out := false
	for _, r := range rules {
		if r.dirOnly && !isDir {
			continue
		}
		p := rel
		if r.base != "" {
			if !strings.HasPrefix(rel, r.base+"/") {
				continue
			}
			p = strings.TrimPrefix(rel, r.base+"/")
		}
		var m bool
		if r.anchored {
			m = globMatch(r.pattern, p)
		} else {
			m = globMatch(r.pattern, path.Base(p))
		}
		if m {
			out = !r.negate
		}
	}
	return out
}

// globMatch matches a gitignore glob against a slash-separated path: "**"
// spans any number of segments, other wildcards stay within one.
func globMatch(pattern, name string) bool {
	ps := strings.Split(pattern, "/")
	ns := strings.Split(name, "/")
	return matchSegments(ps, ns)
}

func matchSegments(ps, ns []string) bool {
	for len(ps) > 0 {
		if ps[0] == "**" {
			rest := ps[1:]
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(ns); i++ {
				if matchSegments(rest, ns[i:]) {
					return true
				}
			}
			return false
		}
		if len(ns) == 0 {
			return false
		}
		if ok, err := path.Match(ps[0], ns[0]); err != nil || !ok {
			return false
		}
		ps, ns = ps[1:], ns[1:]
	}
	return len(ns) == 0
}
