package split

import (
	"fmt"
	"slices"
	"strings"
)

// ConfigError reports a splitter setting that cannot be used. Param names the
// setting as SEMANTICS §3 and Settings' JSON keys spell it ("maxLength",
// "overlapWords"), so surfaces can map it to their own spelling (a flag).
type ConfigError struct {
	Splitter string // "delimiter", "sentence", …; empty when the name itself is unknown
	Param    string
	Reason   string
}

// Error says which splitter and setting are at fault, and why.
func (e *ConfigError) Error() string {
	if e.Splitter == "" {
		return "split: " + e.Param + " " + e.Reason
	}
	return "split: " + e.Splitter + " splitter: " + e.Param + " " + e.Reason
}

func mustBePositive(splitter, param string, v int) error {
	return &ConfigError{splitter, param, fmt.Sprintf("must be greater than 0, got %d", v)}
}

func mustNotBeNegative(splitter, param string, v int) error {
	return &ConfigError{splitter, param, fmt.Sprintf("must be greater than or equal to 0, got %d", v)}
}

// Settings are splitter settings as a person states them: command-line flags,
// a configuration file, an API request. A nil field was not given and takes
// the splitter's default; a given value is checked as stated, so an explicit
// maxLength of 0 is an error rather than the default (SEMANTICS §3), and an
// explicit overlapTokens of 0 turns overlap off. The JSON keys are the
// setting names of SEMANTICS §3.
type Settings struct {
	// Delimiter: see DelimiterConfig.
	MaxLength   *int    `json:"maxLength,omitempty"`
	Separator   *string `json:"separator,omitempty"`
	WordOverlap *int    `json:"wordOverlap,omitempty"`
	MinLength   *int    `json:"minLength,omitempty"`
	// Sentence: see SentenceConfig.
	MaxWords     *int `json:"maxWords,omitempty"`
	OverlapWords *int `json:"overlapWords,omitempty"`
	MinWords     *int `json:"minWords,omitempty"`
	// Recursive, Markdown and Auto: see RecursiveConfig.
	MaxTokens     *int `json:"maxTokens,omitempty"`
	OverlapTokens *int `json:"overlapTokens,omitempty"`
	// Code and Auto: see CodeConfig.
	MaxLines *int `json:"maxLines,omitempty"`
}

// Names lists the splitter names New accepts, in the order people meet them.
func Names() []string {
	return []string{"auto", "recursive", "markdown", "code", "sentence", "delimiter"}
}

// params lists which settings each splitter takes.
func params(name string) []string {
	switch name {
	case "delimiter":
		return []string{"maxLength", "separator", "wordOverlap", "minLength"}
	case "sentence":
		return []string{"maxWords", "overlapWords", "minWords"}
	case "recursive", "markdown":
		return []string{"maxTokens", "overlapTokens"}
	case "code":
		return []string{"maxLines"}
	case "auto":
		return []string{"maxTokens", "overlapTokens", "maxLines"}
	}
	return nil
}

// given returns the settings that were stated, by name, in a fixed order.
func (s Settings) given() []string {
	var out []string
	for _, p := range []struct {
		name string
		set  bool
	}{
		{"maxLength", s.MaxLength != nil}, {"separator", s.Separator != nil},
		{"wordOverlap", s.WordOverlap != nil}, {"minLength", s.MinLength != nil},
		{"maxWords", s.MaxWords != nil}, {"overlapWords", s.OverlapWords != nil},
		{"minWords", s.MinWords != nil}, {"maxTokens", s.MaxTokens != nil},
		{"overlapTokens", s.OverlapTokens != nil}, {"maxLines", s.MaxLines != nil},
	} {
		if p.set {
			out = append(out, p.name)
		}
	}
	return out
}

// explicit checks what a config struct cannot: a stated zero where zero is
// not a valid value, and a stated empty separator.
func (s Settings) explicit(name string) error {
	positive := []struct {
		param string
		v     *int
	}{{"maxLength", s.MaxLength}, {"maxWords", s.MaxWords}, {"maxTokens", s.MaxTokens}, {"maxLines", s.MaxLines}}
	for _, p := range positive {
		if p.v != nil && *p.v <= 0 {
			return mustBePositive(name, p.param, *p.v)
		}
	}
	if s.Separator != nil && *s.Separator == "" {
		return &ConfigError{name, "separator", "must not be empty"}
	}
	if s.OverlapTokens != nil && *s.OverlapTokens < 0 {
		return mustNotBeNegative(name, "overlapTokens", *s.OverlapTokens)
	}
	return nil
}

// New returns the named splitter (one of Names) configured from s. A setting
// the splitter does not take is an error, so a misplaced flag is never
// silently ignored; so is any value its constructor rejects. Errors are
// *ConfigError.
func New(name string, s Settings) (Splitter, error) {
	takes := params(name)
	if takes == nil {
		return nil, &ConfigError{Param: "splitter", Reason: fmt.Sprintf("%q is not one of %s", name, strings.Join(Names(), ", "))}
	}
	for _, g := range s.given() {
		if !slices.Contains(takes, g) {
			return nil, &ConfigError{name, g, fmt.Sprintf("does not apply to the %s splitter, which takes %s", name, strings.Join(takes, ", "))}
		}
	}
	if err := s.explicit(name); err != nil {
		return nil, err
	}
	budget := RecursiveConfig{MaxTokens: deref(s.MaxTokens), OverlapTokens: deref(s.OverlapTokens)}
	if s.OverlapTokens != nil && *s.OverlapTokens == 0 {
		budget.NoOverlap = true
	}
	code := CodeConfig{MaxLines: deref(s.MaxLines)}
	switch name {
	case "delimiter":
		cfg := DelimiterConfig{MaxLength: deref(s.MaxLength), WordOverlap: deref(s.WordOverlap), MinLength: deref(s.MinLength)}
		if s.Separator != nil {
			cfg.Separator = *s.Separator
		}
		return NewDelimiter(cfg)
	case "sentence":
		return NewSentence(SentenceConfig{MaxWords: deref(s.MaxWords), OverlapWords: deref(s.OverlapWords), MinWords: deref(s.MinWords)})
	case "recursive":
		return NewRecursive(budget)
	case "markdown":
		return NewMarkdown(MarkdownConfig{Budget: budget})
	case "code":
		return NewCode(code)
	default: // auto
		return NewAuto(AutoConfig{Budget: budget, Code: code})
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func lessThan(v int, other string, limit int) string {
	return fmt.Sprintf("must be less than %s (%d), got %d", other, limit, v)
}
