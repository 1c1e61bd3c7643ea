package postgres

import "testing"

func TestCheckFragment(t *testing.T) {
	tests := []struct {
		frag string
		ok   bool
	}{
		{"metadata ? 'x'", true},
		{"(metadata->>'a') = 'b' OR source_name LIKE 'docs/%'", true},
		{"metadata @? '$.tags[*] ? (@ == \"go\")'", true},
		{"content ILIKE 'it''s (open'", true},
		{`"source_name" = 'a'`, true},
		{`E'a\'b' = source_name`, true},
		{"lower(source_name) = 'x'", true},
		// The escapes a request used to reach every tenant and collection.
		{"true) OR (true", false},
		{"1=1) OR (1=1", false},
		{"true)) OR ((true", false},
		{"true; DELETE FROM quarry_documents", false},
		{"true -- ", false},
		{"true /* */", false},
		{"$$a$$ = 'a'", false},
		{"source_name = $1", false},
		{"'open", false},
		{`"open`, false},
		{"(true", false},
		{`'a\' OR true --'`, false},
		{`E'a\' OR true`, false},
		{"", false},
		{"true\x00", false},
	}
	for _, tt := range tests {
		err := checkFragment(tt.frag)
		if (err == nil) != tt.ok {
			t.Errorf("checkFragment(%q) = %v, want ok=%v", tt.frag, err, tt.ok)
		}
	}
}

func FuzzCheckFragment(f *testing.F) {
	f.Add("metadata ? 'x'")
	f.Add("true) OR (true")
	f.Add(`E'a\'b' = source_name`)
	f.Fuzz(func(t *testing.T, frag string) {
		if checkFragment(frag) != nil {
			return
		}
		// An accepted fragment, however it nests, is one parenthesised
		// expression: wrapping it keeps the outer parenthesis closed last.
		depth, inQuote := 0, byte(0)
		w := "(" + frag + ")"
		for i := 0; i < len(w); i++ {
			c := w[i]
			if inQuote != 0 {
				if c == inQuote {
					if i+1 < len(w) && w[i+1] == inQuote {
						i++
						continue
					}
					inQuote = 0
				} else if c == '\\' && inQuote == '\'' && i > 0 {
					i++ // only E'' strings reach here with a backslash
				}
				continue
			}
			switch c {
			case '\'', '"':
				inQuote = c
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 && i != len(w)-1 {
					t.Fatalf("accepted %q closes the wrapping parenthesis early", frag)
				}
			}
		}
	})
}
