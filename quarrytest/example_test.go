package quarrytest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/quarrytest"
)

// TestSupportBot is how a program built on Quarry tests its answers: an
// in-memory knowledge base, documents added whole, and a scripted chat
// model that answers through the real pipeline (prompt, citations).
func TestSupportBot(t *testing.T) {
	ctx := context.Background()
	model := &quarrytest.ChatModel{Replies: []string{"Refunds are paid within fourteen days [1]."}}
	kb := quarrytest.NewKB(t, quarry.WithChatModel(model))
	docs := kb.Collection("")
	if _, err := docs.Add(ctx,
		quarry.NewDocument{Text: "Refunds are paid within fourteen days of the return.", Source: "refunds.md"},
		quarry.NewDocument{Text: "Parcels leave the warehouse every weekday.", Source: "shipping.md"},
	); err != nil {
		t.Fatal(err)
	}
	ans, err := docs.Ask(ctx, "How long do refunds take?")
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Citations) != 1 || ans.Citations[0].Source != "refunds.md" {
		t.Errorf("citations: %+v", ans.Citations)
	}
	// The model saw the passages inside the prompt's context block.
	reqs := model.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, "fourteen days") {
		t.Errorf("the model was not given the passages: %+v", reqs)
	}
}

// TestThroughOpenAIWire runs the same question through Quarry's real
// OpenAI provider against OpenAIServer, for tests that cover the wire.
func TestThroughOpenAIWire(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "test")
	srv := quarrytest.OpenAIServer(t, func(messages []map[string]any) string { return "Fourteen days [1]." })
	kb := quarrytest.NewKB(t, quarry.WithChatModelSpec("openai-compatible:m@"+srv.URL+"/v1"))
	docs := kb.Collection("")
	if _, err := docs.Add(context.Background(), quarry.NewDocument{Text: "Refunds are paid within fourteen days.", Source: "refunds.md"}); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		var text string
		if stream {
			events, err := kb.AskStream(context.Background(), quarry.Developer(), quarry.AskRequest{Question: "How long do refunds take?"})
			if err != nil {
				t.Fatal(err)
			}
			for ev, err := range events {
				if err != nil {
					t.Fatal(err)
				}
				text += ev.Text
			}
		} else {
			ans, err := docs.Ask(context.Background(), "How long do refunds take?")
			if err != nil {
				t.Fatal(err)
			}
			text = ans.Answer
		}
		if text != "Fourteen days [1]." {
			t.Errorf("stream=%v: %q", stream, text)
		}
	}
}
