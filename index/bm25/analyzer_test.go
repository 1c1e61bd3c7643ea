package bm25

import (
	"slices"
	"strings"
	"testing"
)

func TestAnalyze(t *testing.T) {
	cases := []struct {
		cfg  AnalyzerConfig
		text string
		want []string
	}{
		{AnalyzerConfig{}, "The Dogs' running quickly, don't U.S.A. the dog’s CAFÉ’S It's 3.14 COVID-19 中文",
			[]string{"dog", "run", "quick", "don't", "u.s.a", "dog", "café", "3.14", "covid", "19", "中", "文"}},
		{AnalyzerConfig{KeepStopWords: true}, "The cat is on the mat", []string{"the", "cat", "is", "on", "the", "mat"}},
		{AnalyzerConfig{NoStemming: true}, "The Running cats' houses", []string{"running", "cats", "houses"}},
		{AnalyzerConfig{Language: "de"}, "Die Häuser der Straße waren schöner als die Bäume",
			[]string{"haus", "strass", "schon", "baum"}},
		{AnalyzerConfig{Language: "french"}, "L'avion et les hôpitaux qu'il a vus jusqu'à Paris",
			[]string{"avion", "hôpital", "a", "vus", "paris"}},
		{AnalyzerConfig{Language: "es"}, "Los niños corrían rápidamente por las calles",
			[]string{"niñ", "corr", "rapid", "call"}},
		{AnalyzerConfig{Language: "it"}, "L'amico dell'università andava nelle città",
			[]string{"amic", "univers", "andav", "citt"}},
		{AnalyzerConfig{Language: "nl"}, "De kinderen liepen snel door de straten",
			[]string{"kinder", "liep", "snel", "strat"}},
		{AnalyzerConfig{Language: "Portuguese"}, "As crianças corriam rapidamente pelas ruas",
			[]string{"crianc", "corr", "rapid", "ruas"}},
		{AnalyzerConfig{}, "", nil},
		{AnalyzerConfig{}, "invalid \xff\xfe utf8 " + strings.Repeat("x", 300) + " ok a \xfe b\xff",
			[]string{"invalid", "utf8", "ok", "b"}},
	}
	for _, c := range cases {
		a, err := NewAnalyzer(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Analyze(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%+v %q:\n got %q\nwant %q", c.cfg, c.text, got, c.want)
		}
	}
}

func TestAnalyzerLanguages(t *testing.T) {
	if _, err := NewAnalyzer(AnalyzerConfig{Language: "klingon"}); err == nil || !strings.Contains(err.Error(), "english") {
		t.Fatalf("unknown language: %v", err)
	}
	for _, l := range Languages() {
		a, err := NewAnalyzer(AnalyzerConfig{Language: strings.ToUpper(l)})
		if err != nil {
			t.Fatal(err)
		}
		if a.Config().Language != l {
			t.Errorf("language %q resolved to %q", l, a.Config().Language)
		}
	}
	if len(Languages()) < 7 {
		t.Fatalf("Languages() = %v", Languages())
	}
}

func BenchmarkAnalyze(b *testing.B) {
	a, _ := NewAnalyzer(AnalyzerConfig{})
	text := strings.Repeat("Quarry turns a pile of documents into a knowledge base that people can search. ", 20)
	var s scratch
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		a.words(&s, text, false, func(w []byte, _ bool) { _, _ = a.term(&s, w) })
	}
}
