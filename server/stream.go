package server

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// event is one server-sent event: its name and its JSON data.
type event struct {
	name string
	data any
}

// streamWriteTimeout bounds writing one event to a client.
const streamWriteTimeout = 10 * time.Second

// registerStream registers an operation answered with server-sent events.
// start runs before the stream opens, so its error (no key, no such job,
// an invalid filter) is an ordinary error response with its status and
// code; the events it returns are then written as they come. types maps
// each event name to the type of its data, for the OpenAPI document.
func registerStream[I any](s *Server, op huma.Operation, types map[string]any, start func(ctx context.Context, in *I) (iter.Seq[event], error)) {
	var schemas []*huma.Schema
	for name, v := range types {
		t := reflect.TypeOf(v)
		schemas = append(schemas, &huma.Schema{
			Title: "Event " + name,
			Type:  huma.TypeObject,
			Properties: map[string]*huma.Schema{
				"event": {Type: huma.TypeString, Description: "The event name.", Extensions: map[string]any{"const": name}},
				"data":  s.api.OpenAPI().Components.Schemas.Schema(t, true, name),
			},
			Required: []string{"event", "data"},
		})
	}
	slices.SortFunc(schemas, func(a, b *huma.Schema) int { return strings.Compare(a.Title, b.Title) })
	op.Responses = map[string]*huma.Response{"200": {
		Description: "Server-sent events",
		Content: map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{
			Title:       "Server-sent events",
			Description: "Each item is one event: `event: NAME` then `data: JSON`.",
			Type:        huma.TypeArray,
			Items:       &huma.Schema{Extensions: map[string]any{"oneOf": schemas}},
		}}},
	}}
	huma.Register(s.api, op, func(ctx context.Context, in *I) (*huma.StreamResponse, error) {
		events, err := start(ctx, in)
		if err != nil {
			return nil, err
		}
		return &huma.StreamResponse{Body: func(hctx huma.Context) {
			hctx.SetHeader("Content-Type", "text/event-stream")
			hctx.SetHeader("Cache-Control", "no-cache")
			w := hctx.BodyWriter()
			var rc *http.ResponseController
			if rw, ok := w.(http.ResponseWriter); ok {
				rc = http.NewResponseController(rw)
			}
			for ev := range events {
				if rc != nil {
					_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
				}
				data, err := json.Marshal(ev.data)
				if err != nil {
					s.log.Error("server: encode an event", "event", ev.name, "err", err)
					return
				}
				if _, err := w.Write([]byte("event: " + ev.name + "\ndata: " + string(data) + "\n\n")); err != nil {
					return // the client went away
				}
				if rc != nil {
					if err := rc.Flush(); err != nil {
						return
					}
				}
			}
		}}, nil
	})
}
