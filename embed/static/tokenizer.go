package static

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// wordPiece is the subset of Hugging Face's tokenizer.json that model2vec's
// WordPiece models use: BertNormalizer, BertPreTokenizer (or whitespace
// splitting) and the WordPiece model.
type wordPiece struct {
	lowercase, stripAccents, chineseChars, cleanText bool
	splitPunct                                       bool
	maxChars                                         int
	// first holds word-initial pieces, cont the continuing pieces with
	// their prefix removed, so lookups need no concatenation.
	first, cont map[string]int32
	maxID       int
}

type tokenizerJSON struct {
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          *bool  `json:"clean_text"`
		HandleChineseChars *bool  `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          *bool  `json:"lowercase"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string           `json:"type"`
		UnkToken                string           `json:"unk_token"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
		Vocab                   map[string]int32 `json:"vocab"`
	} `json:"model"`
}

func orTrue(b *bool) bool { return b == nil || *b }

func parseTokenizer(b []byte) (*wordPiece, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(b, &tj); err != nil {
		return nil, err
	}
	if tj.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("tokenizer model %q: only WordPiece is read", tj.Model.Type)
	}
	w := &wordPiece{maxChars: tj.Model.MaxInputCharsPerWord, first: map[string]int32{}, cont: map[string]int32{}}
	if w.maxChars <= 0 {
		w.maxChars = 100
	}
	if n := tj.Normalizer; n != nil {
		switch n.Type {
		case "BertNormalizer":
			w.cleanText, w.chineseChars, w.lowercase = orTrue(n.CleanText), orTrue(n.HandleChineseChars), orTrue(n.Lowercase)
			w.stripAccents = w.lowercase // null follows lowercase
			if n.StripAccents != nil {
				w.stripAccents = *n.StripAccents
			}
		case "Lowercase":
			w.lowercase = true
		default:
			return nil, fmt.Errorf("normalizer %q: BertNormalizer and Lowercase are read", n.Type)
		}
	}
	if p := tj.PreTokenizer; p != nil {
		switch p.Type {
		case "BertPreTokenizer":
			w.splitPunct = true
		case "Whitespace":
			w.splitPunct = true // \w+|[^\w\s]+ splits punctuation off words too
		case "WhitespaceSplit":
		default:
			return nil, fmt.Errorf("pre-tokenizer %q: BertPreTokenizer, Whitespace and WhitespaceSplit are read", p.Type)
		}
	}
	prefix := "##"
	if tj.Model.ContinuingSubwordPrefix != nil {
		prefix = *tj.Model.ContinuingSubwordPrefix
	}
	if len(tj.Model.Vocab) == 0 {
		return nil, fmt.Errorf("empty vocabulary")
	}
	for tok, id := range tj.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("token %q has id %d", tok, id)
		}
		w.maxID = max(w.maxID, int(id))
		if tok == tj.Model.UnkToken {
			continue // model2vec leaves unknown tokens out of the mean
		}
		if prefix != "" && strings.HasPrefix(tok, prefix) && len(tok) > len(prefix) {
			w.cont[tok[len(prefix):]] = id
		} else {
			w.first[tok] = id
		}
	}
	return w, nil
}

// encode appends the token ids of text to ids, at most limit in all.
func (w *wordPiece) encode(text string, ids []int32, limit int) []int32 {
	text = w.normalize(text)
	start := -1
	for i, r := range text {
		if len(ids) >= limit {
			return ids
		}
		sep := unicode.IsSpace(r)
		alone := !sep && ((w.splitPunct && isPunct(r)) || (w.chineseChars && isCJK(r)))
		if sep || alone {
			if start >= 0 {
				ids = w.word(text[start:i], ids, limit)
				start = -1
			}
			if alone {
				ids = w.word(text[i:i+utf8.RuneLen(r)], ids, limit)
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		ids = w.word(text[start:], ids, limit)
	}
	return ids
}

// word appends the pieces of one word, greedy longest match first; a word
// with a piece not in the vocabulary is unknown and adds nothing.
func (w *wordPiece) word(s string, ids []int32, limit int) []int32 {
	if utf8.RuneCountInString(s) > w.maxChars {
		return ids
	}
	n := len(ids)
	vocab := w.first
	for start := 0; start < len(s); {
		end := len(s)
		found := false
		for end > start {
			if id, ok := vocab[s[start:end]]; ok {
				ids = append(ids, id)
				found = true
				break
			}
			_, size := utf8.DecodeLastRuneInString(s[start:end])
			end -= size
		}
		if !found {
			return ids[:n]
		}
		start = end
		vocab = w.cont
	}
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids
}

func (w *wordPiece) normalize(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		if w.cleanText {
			s = strings.Map(cleanASCII, s)
		}
		if w.lowercase {
			s = strings.ToLower(s)
		}
		return s
	}
	if w.cleanText {
		s = strings.Map(clean, s)
	}
	if w.lowercase {
		s = strings.ToLower(s)
	}
	if w.stripAccents {
		s = strings.Map(dropMark, norm.NFD.String(s))
	}
	return s
}

func cleanASCII(r rune) rune {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return ' '
	case r < 0x20 || r == 0x7f:
		return -1
	}
	return r
}

// clean drops what BERT's clean_text drops (NUL, U+FFFD, control and
// format characters) and turns whitespace into spaces.
func clean(r rune) rune {
	switch {
	case r == 0 || r == utf8.RuneError:
		return -1
	case r == '\t' || r == '\n' || r == '\r' || unicode.IsSpace(r):
		return ' '
	case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
		return -1
	}
	return r
}

func dropMark(r rune) rune {
	if unicode.Is(unicode.Mn, r) {
		return -1
	}
	return r
}

// isPunct is BERT's punctuation: ASCII symbols as well as Unicode P*.
func isPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return r > 127 && unicode.IsPunct(r)
}

// isCJK is BERT's "Chinese character" ranges, each its own word.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
