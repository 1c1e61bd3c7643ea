package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/quarry-rag/quarry/store"
)

// metrics are a server's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec
	stages   *prometheus.HistogramVec
	files    *prometheus.CounterVec
	chunks   prometheus.Counter
	jobs     *prometheus.CounterVec
}

// latencyBuckets span a cached keyword search (tens of µs) to a slow
// answer from a chat model (a minute).
func latencyBuckets() []float64 {
	return []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
}

func newMetrics(st *store.Store) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "quarry_http_request_duration_seconds",
			Help: "HTTP request latency by route, method and status.", Buckets: latencyBuckets()}, []string{"route", "method", "status"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "quarry_stage_duration_seconds",
			Help: "Latency of pipeline stages: embed, search, retrieve, generate.", Buckets: latencyBuckets()}, []string{"stage"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_ingest_files_total",
			Help: "Files handled by ingestion jobs, by outcome."}, []string{"outcome"}),
		chunks: prometheus.NewCounter(prometheus.CounterOpts{Name: "quarry_ingest_chunks_total",
			Help: "Chunks written by ingestion jobs and document uploads."}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_ingest_jobs_total",
			Help: "Ingestion jobs finished, by state."}, []string{"state"}),
	}
	m.reg.MustRegister(m.requests, m.stages, m.files, m.chunks, m.jobs, newSizeCollector(st),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) observeRequest(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Observe(d.Seconds())
}

func (m *metrics) observeStage(stage string, d time.Duration) {
	m.stages.WithLabelValues(stage).Observe(d.Seconds())
}

// sizeCollector reports each collection's document count when scraped.
type sizeCollector struct {
	st   *store.Store
	desc *prometheus.Desc
}

func newSizeCollector(st *store.Store) *sizeCollector {
	return &sizeCollector{st: st, desc: prometheus.NewDesc("quarry_collection_documents",
		"Documents (chunks) stored per collection.", []string{"collection"}, nil)}
}

func (c *sizeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *sizeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfgs, err := c.st.Collections(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, cc := range cfgs {
		coll, err := c.st.Collection(ctx, cc.Name)
		if err != nil {
			continue // dropped meanwhile
		}
		n, err := coll.Count(ctx, nil)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.desc, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), cc.Name)
	}
}
