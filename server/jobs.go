package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/danielgtaylor/huma/v2"

	"github.com/quarry-rag/quarry"
	"github.com/quarry-rag/quarry/document"
	"github.com/quarry-rag/quarry/filter"
	"github.com/quarry-rag/quarry/ingest"
	"github.com/quarry-rag/quarry/keys"
	"github.com/quarry-rag/quarry/load"
	"github.com/quarry-rag/quarry/store"
)

// UploadForm is the multipart body of an upload.
type UploadForm struct {
	Files    []huma.FormFile `form:"file" required:"true" doc:"Files to ingest (text, Markdown, HTML, PDF, DOCX, code, JSON, CSV…)"`
	Metadata string          `form:"metadata" required:"false" doc:"Optional JSON object of metadata added to every chunk"`
}

type uploadInput struct {
	CollectionPath
	RawBody huma.MultipartFormFiles[UploadForm]
}

// upload saves the files under a job folder and ingests them as a job.
// Under a key with a scope, the files' sources are named under the key's
// id, so they can never replace another client's sources, and the scope's
// equality conditions are added to the chunks' metadata.
func (s *Server) upload(ctx context.Context, in *uploadInput) (*body[JobStarted], error) {
	p, err := s.authorize(ctx, keys.PermWrite, in.Collection)
	if err != nil {
		return nil, err
	}
	if s.cfg.IngestOptions == nil {
		return nil, apiError(http.StatusForbidden, CodeForbidden, "uploads are off on this server")
	}
	form := in.RawBody.Data()
	if form == nil || len(form.Files) == 0 {
		return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, "no file: send the files in the multipart field \"file\"")
	}
	meta := Metadata{}
	if strings.TrimSpace(form.Metadata) != "" {
		if err := json.Unmarshal([]byte(form.Metadata), &meta); err != nil {
			return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, "metadata: a JSON object is expected: "+err.Error())
		}
		if meta == nil {
			meta = Metadata{}
		}
	}
	for k, v := range scopeValues(p.scope) {
		if _, set := meta[k]; !set {
			meta[k] = v
		}
	}
	c, err := s.collection(ctx, p, in.Collection, true)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if p.scope != nil {
		prefix = p.key.ID + "/"
	}
	matcher, err := filter.NewMatcher(p.scope)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	type file struct {
		name string
		data []byte
	}
	files := make([]file, 0, len(form.Files))
	seen := map[string]bool{}
	var headers []*multipart.FileHeader
	if in.RawBody.Form != nil {
		headers = in.RawBody.Form.File["file"]
	}
	for i, ff := range form.Files {
		raw := ff.Filename
		if i < len(headers) {
			raw = rawFileName(headers[i])
		}
		name, err := uploadName(raw)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("two files are named %q", name))
		}
		seen[name] = true
		data, err := io.ReadAll(io.LimitReader(ff.File, s.cfg.MaxUploadBytes+1))
		if err != nil {
			return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("read %s: %v", name, err))
		}
		if int64(len(data)) > s.cfg.MaxUploadBytes {
			return nil, apiError(http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("%s is over this server's upload limit of %s", name, byteSize(s.cfg.MaxUploadBytes)))
		}
		if _, err := load.Sniff(name, data); err != nil {
			return nil, apiError(http.StatusUnsupportedMediaType, CodeUnsupportedType, fmt.Sprintf("%s: %v; Quarry reads text, Markdown, HTML, PDF, DOCX, code, JSON and CSV", name, err))
		}
		probe := document.New("")
		probe.SourceType, probe.SourceName = load.SourceTypeOf(name), prefix+name
		if err := probe.AddMetadata(meta); err != nil {
			return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, "metadata: "+err.Error())
		}
		if p.scope != nil && !matcher.MatchDocument(probe) {
			return nil, apiError(http.StatusForbidden, CodeOutOfScope, fmt.Sprintf("%s would be outside this key's scope: give it metadata that matches the scope", name))
		}
		files = append(files, file{name: name, data: data})
	}
	dir, err := s.jobDir()
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	sources := make([]string, len(files))
	for i, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(prefix), f.name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, s.fromLibrary(err)
		}
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, s.fromLibrary(err)
		}
		sources[i] = prefix + f.name
	}
	started, err := s.startJob(ctx, p, c, quarry.IngestRequest{Paths: []string{dir}, Metadata: meta, Uploaded: true}, func() { os.RemoveAll(dir) })
	if err != nil {
		return nil, err
	}
	started.Sources = sources
	return &body[JobStarted]{Body: started}, nil
}

// rawFileName is the file name a client sent, before mime/multipart
// reduces it to its last element: a name with a path in it is refused, not
// silently shortened.
func rawFileName(fh *multipart.FileHeader) string {
	_, params, err := mime.ParseMediaType(fh.Header.Get("Content-Disposition"))
	if err != nil || params["filename"] == "" {
		return fh.Filename
	}
	return params["filename"]
}

// uploadName checks an uploaded file's name: a plain file name, never a
// path.
func uploadName(name string) (string, error) {
	bad := func(why string) error {
		return apiError(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("file name %q refused: %s", name, why))
	}
	switch {
	case name == "":
		return "", bad("a file name is required")
	case strings.ContainsAny(name, `/\`) || name == ".." || strings.Contains(name, ".."):
		return "", bad("a path is not a file name (path traversal)")
	case strings.HasPrefix(name, "."):
		return "", bad("hidden files are not ingested")
	case len(name) > 255:
		return "", bad("over 255 bytes")
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return "", bad("control characters")
		}
	}
	return name, nil
}

// jobDir makes a fresh folder for one upload.
func (s *Server) jobDir() (string, error) {
	base := s.cfg.UploadDir
	if base == "" {
		base = os.TempDir()
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("upload folder: %w", err)
	}
	return os.MkdirTemp(base, "quarry-upload-")
}

// scopeValues are the field values a scope fixes by equality at its top
// level (tenant = 'acme' and …), which uploads under it inherit.
func scopeValues(f filter.Expr) map[string]any {
	out := map[string]any{}
	var walk func(filter.Expr)
	walk = func(e filter.Expr) {
		switch e := e.(type) {
		case *filter.Condition:
			if e.Op == filter.OpEq && e.Field != "sourceName" && e.Field != "sourceType" {
				out[e.Field] = e.Value
			}
		case *filter.Group:
			if e.Op == filter.OpAnd {
				for _, c := range e.Conditions {
					walk(c)
				}
			}
		}
	}
	if f != nil {
		walk(f)
	}
	return out
}

type ingestInput struct {
	CollectionPath
	Body IngestBody
}

// ingestPaths ingests files from the server's ingest roots: admin keys
// only, and never a path outside the roots.
func (s *Server) ingestPaths(ctx context.Context, in *ingestInput) (*body[JobStarted], error) {
	p, err := s.authorize(ctx, keys.PermAdmin, in.Collection)
	if err != nil {
		return nil, err
	}
	if s.roots == nil || s.cfg.IngestOptions == nil {
		return nil, apiError(http.StatusForbidden, CodeForbidden, "ingestion from server folders is off: start the server with --root")
	}
	if err := s.scope(p).MayIngestPaths(); err != nil {
		return nil, s.fromLibrary(err)
	}
	paths, err := s.roots.ConfineAll(in.Body.Paths)
	if err != nil {
		return nil, apiError(http.StatusForbidden, CodeForbidden, "refused: "+err.Error())
	}
	c, err := s.collection(ctx, p, in.Collection, true)
	if err != nil {
		return nil, err
	}
	sel := load.Selection{Include: in.Body.Include, Exclude: in.Body.Exclude}
	if err := sel.Check(); err != nil {
		return nil, apiError(http.StatusBadRequest, CodeInvalidRequest, err.Error())
	}
	started, err := s.startJob(ctx, p, c, quarry.IngestRequest{Paths: paths, Metadata: in.Body.Metadata, Include: sel.Include, Exclude: sel.Exclude,
		Prefix: in.Body.Prefix, Replace: in.Body.Replace}, nil)
	if err != nil {
		return nil, err
	}
	return &body[JobStarted]{Body: started}, nil
}

// startJob runs an ingestion in a goroutine the server owns (the core's
// StartIngest) and returns once the job is recorded; cleanup, for
// uploads, removes their files when it ends.
func (s *Server) startJob(ctx context.Context, p *principal, c *store.Collection, req quarry.IngestRequest, cleanup func()) (JobStarted, error) {
	req.Collection = c.Name()
	req.Progress = func(e ingest.Event) {
		switch e.Event {
		case "file":
			s.metrics.files.WithLabelValues("read").Inc()
		case "error":
			s.metrics.files.WithLabelValues("failed").Inc()
		}
	}
	ctx, span := s.tracer.Start(ctx, "ingest")
	defer span.End()
	begun := time.Now()
	done := func(rep *ingest.Report, err error) {
		s.metrics.observeStage("ingest", time.Since(begun))
		if err != nil {
			s.metrics.jobs.WithLabelValues(store.JobFailed).Inc()
			s.log.Warn("server: ingestion failed", "collection", c.Name(), "err", err)
			return
		}
		s.metrics.jobs.WithLabelValues(store.JobDone).Inc()
		s.metrics.chunks.Add(float64(rep.Chunks))
		s.log.Info("server: ingestion done", "collection", c.Name(), "files", rep.Files, "chunks", rep.Chunks)
	}
	st, err := s.kb.StartIngest(ctx, s.scope(p), req, quarry.Background{Jobs: s.jobs, Options: s.cfg.IngestOptions, Done: done, Cleanup: cleanup})
	if errors.Is(err, ingest.ErrClosed) {
		return JobStarted{}, apiError(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	if err != nil {
		return JobStarted{}, s.fromLibrary(err)
	}
	out := JobStarted{JobID: st.ID, State: st.State}
	if p.scope != nil { // only keys with a filter are limited to their own jobs
		s.mu.Lock()
		s.jobOwner[out.JobID] = p.keyID()
		s.mu.Unlock()
	}
	return out, nil
}

type jobPath struct {
	ID string `path:"id" maxLength:"100"`
}

// job returns a job the caller may see: a key with a scope sees the jobs
// it started; others see the jobs of their collections.
func (s *Server) job(ctx context.Context, id string) (store.Job, error) {
	p, err := s.authorize(ctx, keys.PermRead, "")
	if err != nil {
		return store.Job{}, err
	}
	js, err := s.kb.Store().Jobs()
	if err != nil {
		return store.Job{}, s.fromLibrary(err)
	}
	notFound := apiError(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no job has id %q", id))
	j, err := js.GetJob(ctx, id)
	if errors.Is(err, store.ErrJobNotFound) {
		return store.Job{}, notFound
	}
	if err != nil {
		return store.Job{}, s.fromLibrary(err)
	}
	s.mu.Lock()
	owner, ours := s.jobOwner[id]
	s.mu.Unlock()
	if !p.allows(j.Collection) || (!s.scope(p).MayReachAll() && (!ours || owner != p.keyID())) {
		return store.Job{}, notFound
	}
	return j, nil
}

func jobOut(j store.Job) Job {
	kind := j.Kind
	if kind == "" {
		kind = ingest.JobKind // recorded before jobs had kinds
	}
	return Job{ID: j.ID, Kind: kind, Collection: j.Collection, State: j.State, Files: j.Files, Total: j.Total, Nodes: j.Nodes,
		Chunks: j.Chunks, Failed: j.Failed, Ignored: j.Ignored, NoText: j.NoText, Error: j.Error, Started: stamp(j.Started), Updated: stamp(j.Updated),
		Finished: stamp(j.Finished)}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (s *Server) getJob(ctx context.Context, in *jobPath) (*body[Job], error) {
	j, err := s.job(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return &body[Job]{Body: jobOut(j)}, nil
}

// jobPoll is how often an event stream looks at a job.
const jobPoll = 200 * time.Millisecond

// jobEvents checks the job exists for the caller before the stream
// opens, then sends its state whenever it changes until it ends.
func (s *Server) jobEvents(ctx context.Context, in *jobPath) (iter.Seq[event], error) {
	j, err := s.job(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return func(yield func(event) bool) {
		last := jobOut(j)
		if !yield(event{"progress", last}) {
			return
		}
		for j.State == store.JobRunning {
			select {
			case <-ctx.Done():
				return
			case <-s.jobs.Done():
				return
			case <-time.After(jobPoll):
			}
			if j, err = s.job(ctx, in.ID); err != nil {
				yield(event{"error", s.fromLibrary(err)})
				return
			}
			if out := jobOut(j); out != last {
				if !yield(event{"progress", out}) {
					return
				}
				last = out
			}
		}
	}, nil
}

type listJobsInput struct {
	Limit int `query:"limit" minimum:"0" maximum:"100" doc:"How many jobs, newest first (default 20)"`
}

func (s *Server) listJobs(ctx context.Context, in *listJobsInput) (*body[JobList], error) {
	p, err := s.authorize(ctx, keys.PermAdmin, "")
	if err != nil {
		return nil, err
	}
	if !s.scope(p).MayReachAll() {
		return nil, errScoped("listing every job")
	}
	js, err := s.kb.Store().Jobs()
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	limit := in.Limit
	if limit == 0 {
		limit = 20
	}
	jobs, err := js.ListJobs(ctx, limit)
	if err != nil {
		return nil, s.fromLibrary(err)
	}
	out := JobList{Jobs: make([]Job, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = jobOut(j)
	}
	return &body[JobList]{Body: out}, nil
}

// byteSize writes n bytes for people.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
