// Package bedrock embeds with Amazon Bedrock's InvokeModel API (POST
// {base}/model/{id}/invoke, signed with AWS Signature Version 4), for the
// Titan text embedding models and Cohere's v3 embedding models on Bedrock.
//
// Titan embeds one text a request; Cohere up to 96, with input_type
// search_document for documents and search_query for queries
// (EmbedQuery). Vectors are L2-normalised, so Normalized is always true.
// Credentials come from the configuration or the AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN variables; profiles, SSO and
// instance roles are not read.
package bedrock

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/quarry-rag/quarry/embed"
	"github.com/quarry-rag/quarry/embed/internal/httpx"
)

// DefaultModel is Titan Text Embeddings V2.
const DefaultModel = "amazon.titan-embed-text-v2:0"

var dimensions = map[string]int{
	"amazon.titan-embed-text-v2:0": 1024,
	"amazon.titan-embed-text-v1":   1536,
	"cohere.embed-english-v3":      1024,
	"cohere.embed-multilingual-v3": 1024,
}

// Config configures the embedder. Zero values mean the defaults.
type Config struct {
	// Model is the Bedrock model id, DefaultModel when empty: amazon.titan-*
	// or cohere.embed-*-v3.
	Model string
	// Region is the AWS region; AWS_REGION or AWS_DEFAULT_REGION when empty.
	Region string
	// BaseURL replaces https://bedrock-runtime.{region}.amazonaws.com.
	BaseURL string
	// AccessKeyID, SecretAccessKey and SessionToken sign the requests;
	// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN when
	// the key id is empty.
	AccessKeyID, SecretAccessKey, SessionToken string
	// Dimension, when set, is requested from Titan V2 (256, 512 or 1024).
	// When 0 the model's known dimension is used, or one call learns it.
	Dimension int
	embed.HTTPOptions
}

// Embedder embeds with Bedrock. It is safe for concurrent use and
// implements embed.QueryEmbedder (queries differ from documents for Cohere
// models only).
type Embedder struct {
	cfg    Config
	url    string
	cred   credentials
	cohere bool
	batch  int
	client httpx.Client
	info   embed.ModelInfo
}

// New returns an embedder. When the dimension is neither configured nor
// known, New makes one call to learn it: a collection must know its
// dimension before its first write.
func New(ctx context.Context, cfg Config) (*Embedder, error) {
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Region == "" {
		cfg.Region = os.Getenv("AWS_REGION")
	}
	if cfg.Region == "" {
		cfg.Region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("bedrock embedder needs a region: set AWS_REGION or AWS_DEFAULT_REGION")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://bedrock-runtime." + cfg.Region + ".amazonaws.com"
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cred := credentials{id: cfg.AccessKeyID, secret: cfg.SecretAccessKey, token: cfg.SessionToken}
	if cred.id == "" {
		cred = credentials{id: os.Getenv("AWS_ACCESS_KEY_ID"), secret: os.Getenv("AWS_SECRET_ACCESS_KEY"), token: os.Getenv("AWS_SESSION_TOKEN")}
	}
	if cred.id == "" || cred.secret == "" {
		return nil, fmt.Errorf("bedrock embedder needs AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	e := &Embedder{
		cfg: cfg,
		// The id's colon is sent escaped, as AWS's SDKs send it.
		url:    cfg.BaseURL + "/model/" + strings.ReplaceAll(url.PathEscape(cfg.Model), ":", "%3A") + "/invoke",
		cred:   cred,
		cohere: strings.HasPrefix(cfg.Model, "cohere."),
		batch:  1,
		client: httpx.New(cfg.HTTPOptions),
	}
	if e.cohere {
		e.batch = 96
	}
	dim, err := httpx.Dimension(ctx, cfg.Dimension, dimensions, cfg.Model, e.documents)
	if err != nil {
		return nil, fmt.Errorf("bedrock embedder: %w", err)
	}
	e.info = embed.ModelInfo{Provider: "bedrock", Model: cfg.Model, Dimension: dim, Normalized: true}
	return e, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() embed.ModelInfo { return e.info }

// Embed implements embed.Embedder.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, e.documents)
}

// EmbedQuery implements embed.QueryEmbedder.
func (e *Embedder) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	return e.embed(ctx, queries, e.queries)
}

func (e *Embedder) embed(ctx context.Context, texts []string, call func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	vecs, err := httpx.Batches(ctx, texts, e.batch, e.info.Dimension, call)
	if err != nil {
		return nil, fmt.Errorf("bedrock embedder %s: %w", e.info, err)
	}
	return vecs, nil
}

type titanRequest struct {
	InputText  string `json:"inputText"`
	Dimensions int    `json:"dimensions,omitempty"`
	Normalize  *bool  `json:"normalize,omitempty"`
}

type titanResponse struct {
	Embedding []float32 `json:"embedding"`
}

type cohereRequest struct {
	Texts     []string `json:"texts"`
	InputType string   `json:"input_type"`
}

type cohereResponse struct {
	Embeddings [][]float32 `json:"embeddings"`
}

func (e *Embedder) documents(ctx context.Context, texts []string) ([][]float32, error) {
	return e.call(ctx, texts, "search_document")
}

func (e *Embedder) queries(ctx context.Context, texts []string) ([][]float32, error) {
	return e.call(ctx, texts, "search_query")
}

func (e *Embedder) sign(req *http.Request, body []byte) error {
	signV4(req, body, e.cred, e.cfg.Region, "bedrock", time.Now())
	return nil
}

func (e *Embedder) call(ctx context.Context, texts []string, inputType string) ([][]float32, error) {
	if e.cohere {
		var resp cohereResponse
		if err := e.client.PostSigned(ctx, e.url, nil, e.sign, cohereRequest{Texts: texts, InputType: inputType}, &resp); err != nil {
			return nil, err
		}
		return resp.Embeddings, nil
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		req := titanRequest{InputText: t}
		if strings.HasPrefix(e.cfg.Model, "amazon.titan-embed-text-v2") {
			normalize := true
			req.Dimensions, req.Normalize = e.cfg.Dimension, &normalize
		}
		var resp titanResponse
		if err := e.client.PostSigned(ctx, e.url, nil, e.sign, req, &resp); err != nil {
			return nil, err
		}
		out[i] = resp.Embedding
	}
	return out, nil
}
