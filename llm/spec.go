package llm

import (
	"fmt"
	"net/url"
	"strings"
)

// Provider names a Spec may start with.
const (
	ProviderOpenAI           = "openai"
	ProviderOpenAICompatible = "openai-compatible"
	ProviderAnthropic        = "anthropic"
	ProviderOllama           = "ollama"
	ProviderGemini           = "gemini"
	ProviderMistral          = "mistral"
)

// Spec names a chat model the way settings write it:
//
//	openai:MODEL                      OpenAI (OPENAI_API_KEY)
//	anthropic:MODEL                   Anthropic (ANTHROPIC_API_KEY)
//	ollama:MODEL                      Ollama at OLLAMA_HOST or http://localhost:11434
//	gemini:MODEL                      Google Gemini (GEMINI_API_KEY or GOOGLE_API_KEY)
//	mistral:MODEL                     Mistral (MISTRAL_API_KEY)
//	openai-compatible:MODEL@BASEURL   any server speaking OpenAI's chat API
//	                                  (vLLM, llama.cpp, LM Studio, …); a key in
//	                                  OPENAI_API_KEY is sent when set
//
// Any provider accepts "@BASEURL" after the model to override its address.
// The model is everything between the first ':' and the first '@', so
// Ollama tags such as "llama3.1:8b" need no quoting.
type Spec struct {
	Provider string
	Model    string
	// BaseURL is empty for the provider's default address.
	BaseURL string
}

// ParseSpec parses a model spec. An empty string is an error: callers treat
// "" as "no chat model" before asking.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	prov, rest, ok := strings.Cut(s, ":")
	if !ok || prov == "" {
		return Spec{}, fmt.Errorf("llm %q: write provider:model, as in openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, ollama:llama3.2 or openai-compatible:MODEL@http://host:port/v1", s)
	}
	model, base, _ := strings.Cut(rest, "@")
	sp := Spec{Provider: strings.ToLower(prov), Model: model, BaseURL: base}
	switch sp.Provider {
	case ProviderOpenAI, ProviderOpenAICompatible, ProviderAnthropic, ProviderOllama, ProviderGemini, ProviderMistral:
	default:
		return Spec{}, fmt.Errorf("llm %q: unknown provider %q (use openai, anthropic, gemini, mistral, ollama or openai-compatible)", s, prov)
	}
	if sp.Model == "" {
		return Spec{}, fmt.Errorf("llm %q: the model name is missing after %q", s, prov+":")
	}
	if sp.Provider == ProviderOpenAICompatible && sp.BaseURL == "" {
		return Spec{}, fmt.Errorf("llm %q: openai-compatible needs the server's base URL after '@', as in openai-compatible:%s@http://localhost:8000/v1", s, sp.Model)
	}
	if sp.BaseURL != "" {
		u, err := url.Parse(sp.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Spec{}, fmt.Errorf("llm %q: base URL %q must be an absolute http or https URL", s, sp.BaseURL)
		}
	}
	return sp, nil
}

// String writes the spec back in the form ParseSpec reads.
func (s Spec) String() string {
	out := s.Provider + ":" + s.Model
	if s.BaseURL != "" {
		out += "@" + s.BaseURL
	}
	return out
}
