// Package spec opens the chat model a setting names (llm.ParseSpec's
// syntax: provider:model[@baseurl]), as package embed/spec does for
// embedders. It is the one place that maps a provider name to its package,
// so every surface offers the same providers.
package spec

import (
	"fmt"
	"strings"

	"github.com/quarry-rag/quarry/llm"
	"github.com/quarry-rag/quarry/llm/anthropic"
	"github.com/quarry-rag/quarry/llm/gemini"
	"github.com/quarry-rag/quarry/llm/mistral"
	"github.com/quarry-rag/quarry/llm/ollama"
	"github.com/quarry-rag/quarry/llm/openai"
)

// Help lists the specs Open accepts, for help texts.
const Help = `  openai:MODEL                      OpenAI (OPENAI_API_KEY)
  anthropic:MODEL                   Anthropic (ANTHROPIC_API_KEY)
  gemini:MODEL                      Google Gemini (GEMINI_API_KEY or GOOGLE_API_KEY)
  mistral:MODEL                     Mistral (MISTRAL_API_KEY)
  ollama:MODEL                      Ollama at OLLAMA_HOST (default http://127.0.0.1:11434)
  openai-compatible:MODEL@BASEURL   any OpenAI-compatible server (vLLM, llama.cpp, LM Studio…)`

// Open builds the chat model s names. An empty s is no model (nil, nil):
// answers are then extractive.
func Open(s string) (llm.ChatModel, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	sp, err := llm.ParseSpec(s)
	if err != nil {
		return nil, err
	}
	switch sp.Provider {
	case llm.ProviderOpenAI, llm.ProviderOpenAICompatible:
		return openai.New(openai.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	case llm.ProviderAnthropic:
		return anthropic.New(anthropic.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	case llm.ProviderOllama:
		return ollama.New(ollama.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	case llm.ProviderGemini:
		return gemini.New(gemini.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	case llm.ProviderMistral:
		return mistral.New(mistral.Config{Model: sp.Model, BaseURL: sp.BaseURL})
	}
	return nil, fmt.Errorf("llm %q: no provider %q in this build", s, sp.Provider)
}
