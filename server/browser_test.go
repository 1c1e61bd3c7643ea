package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/quarry-rag/quarry"
)

// chromium finds a Chromium or Chrome binary; "" when there is none.
func chromium() string {
	if p := os.Getenv("QUARRY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowserUI drives the web UI in headless Chromium as a person would:
// upload a file and watch its job finish, search it, ask a question, and
// open the cited passage with its heading. With QUARRY_ARTIFACTS set, a
// screenshot of the opened citation is written there.
func TestBrowserUI(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium binary found (looked for chromium, chromium-browser, google-chrome, headless-shell; or set QUARRY_CHROMIUM): install it with `apt-get install chromium` to run the browser test")
	}
	// Ingestion brings the knowledge hierarchy up to date, as the command
	// line's does (quarry.KB.IngestOptions).
	f := newFixture(t, func(c *config) {
		c.kb = append(c.kb, quarry.WithProfiles(quarry.Profile{Name: "urls", Description: "Web pages only", Sources: []string{"url"}}))
	})
	doc := filepath.Join(t.TempDir(), "handbook.md")
	write(t, doc, "# Handbook\n\n## Refunds\n\nRefunds are paid within fourteen days of the return reaching our warehouse.\n\n"+
		"## Shipping\n\nParcels leave the Rotterdam warehouse every weekday before noon.\n")

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	var mu sync.Mutex
	var exceptions []string
	// The first action starts the browser; Listen needs the tab to exist.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok && e.ExceptionDetails != nil {
			mu.Lock()
			exceptions = append(exceptions, e.ExceptionDetails.Text)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	fail := func(step string, err error) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s: %v (page exceptions: %v)", step, err, exceptions)
	}
	text := func(step, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			fail(step, err)
		}
		return s
	}
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			fail(step, err)
		}
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	do("open", chromedp.Navigate(f.url+"/"),
		chromedp.WaitVisible(css("#tab-chat")),
		chromedp.WaitReady(css(`#collection option[value="default"]`)))

	do("upload", chromedp.Click(css("#tab-collections")),
		chromedp.SetUploadFiles(css("#upload-file"), []string{doc}),
		chromedp.Click(css("#upload-btn")),
		chromedp.WaitVisible(css(`#job-state[data-state="done"]`)),
		chromedp.WaitVisible(css(`#collection-table tr[data-collection="default"]`)))
	jobState := text("upload", "#job-state")

	do("search", chromedp.Click(css("#tab-search")),
		chromedp.SendKeys(css("#search-q"), "refunds warehouse"),
		chromedp.SetValue(css("#search-mode"), "hybrid"),
		chromedp.Click(css("#search-explain")),
		chromedp.Click(css("#search-btn")),
		chromedp.WaitVisible(css("#search-results .result")))
	summary := text("search", "#search-summary")
	firstResult := text("search", "#search-results .result")
	// Through a profile that includes web pages only, the uploaded file is
	// out of view.
	do("search through a profile", chromedp.SetValue(css("#profile"), "urls"),
		chromedp.Click(css("#search-btn")),
		chromedp.WaitVisible(css("#search-summary")))
	throughProfile := text("search through a profile", "#search-summary")
	do("no profile", chromedp.SetValue(css("#profile"), ""))
	if !strings.HasPrefix(throughProfile, "0 results") {
		t.Errorf("a search through the urls profile shows %q", throughProfile)
	}

	do("ask", chromedp.Click(css("#tab-chat")),
		chromedp.SendKeys(css("#chat-q"), "How fast are refunds paid?"),
		chromedp.Click(css("#chat-send")),
		chromedp.WaitVisible(css(`.msg.answer[data-done="true"] .chip`)))
	chip := text("ask", ".msg.answer .chip")

	do("open citation", chromedp.Click(css(".msg.answer .chip")),
		chromedp.WaitVisible(css("#passage")))
	meta := text("open citation", "#passage-meta")
	passage := text("open citation", "#passage-text")

	do("ask the agent", chromedp.Click(css("#passage-close")),
		chromedp.Click(css("#chat-agent")),
		chromedp.SendKeys(css("#chat-q"), "How fast are refunds paid and are gift cards refunded?"),
		chromedp.Click(css("#chat-send")),
		chromedp.WaitVisible(css(`#messages .msg.answer:last-child[data-done="true"] details.steps summary`)),
		chromedp.Click(css("#messages .msg.answer:last-child details.steps summary")))
	agentSteps := text("ask the agent", "#messages .msg.answer:last-child details.steps")
	if !strings.Contains(agentSteps, "triage") || !strings.Contains(agentSteps, "search") || !strings.Contains(agentSteps, "rounds") {
		t.Errorf("the agent's steps show %q", agentSteps)
	}
	do("agent off", chromedp.Click(css("#chat-agent")))

	do("hierarchy",
		chromedp.Click(css("#tab-hierarchy")),
		chromedp.WaitVisible(css("#tree .node")),
		chromedp.WaitVisible(css("#health-summary")))
	tree := text("hierarchy", "#tree")
	health := text("hierarchy", "#health-summary")
	links := text("hierarchy", "#links")
	screenshot(t, ctx, "ui-hierarchy.png")

	if !strings.Contains(jobState, "done: 1/1 files") {
		t.Errorf("job state %q", jobState)
	}
	if !strings.Contains(summary, "hybrid") || !strings.Contains(firstResult, "Refunds are paid") || !strings.Contains(firstResult, "keyword rank") {
		t.Errorf("search shows %q / %q", summary, firstResult)
	}
	if !strings.Contains(chip, "handbook.md") || !strings.Contains(chip, "Refunds") {
		t.Errorf("source chip %q", chip)
	}
	if !strings.Contains(meta, "Heading: Handbook › Refunds") || !strings.Contains(passage, "fourteen days") {
		t.Errorf("opened citation: %q / %q", meta, passage)
	}
	if !strings.Contains(tree, "Root") || !strings.Contains(tree, "passages") || !strings.Contains(health, "nodes") {
		t.Errorf("hierarchy tab: %q / %q", tree, health)
	}
	if links == "" { // one uploaded file makes one node: no links, said so
		t.Errorf("hierarchy tab shows no link graph nor its absence")
	}
	// Folders make nodes and links: the graph is drawn, and a click on a
	// node searches it.
	write(t, filepath.Join(f.root, "docs", "billing", "invoices.md"), "# Invoices\n\nInvoices list refunds.\n")
	write(t, filepath.Join(f.root, "docs", "support", "refunds.md"), "# Refunds\n\nSupport explains refunds and invoices.\n")
	r := f.do(t, "POST", "/v1/collections/dir/ingest", "", map[string]any{"paths": []string{"docs"}})
	expect(t, "ingest folders", r, 202, "")
	f.waitJob(t, r.body["job_id"].(string), "")
	do("link graph", chromedp.Navigate(f.url+"/"),
		chromedp.WaitReady(css(`#collection option[value="dir"]`)),
		chromedp.SetValue(css("#collection"), "dir"),
		chromedp.Click(css("#tab-hierarchy")),
		chromedp.WaitVisible(css("#links svg .graph-node")))
	screenshot(t, ctx, "ui-links.png")
	do("click a node", chromedp.Click(css("#links svg .graph-node")),
		chromedp.WaitVisible(css("#search-results .result")))
	nodeSearch := text("click a node", "#search-summary")
	if !strings.Contains(nodeSearch, "results") {
		t.Errorf("a click on a node searched %q", nodeSearch)
	}
	// The screenshot shows the answer with its citation opened.
	do("reopen citation", chromedp.Navigate(f.url+"/"), chromedp.WaitReady(css(`#collection option[value="default"]`)),
		chromedp.SendKeys(css("#chat-q"), "How fast are refunds paid?"), chromedp.Click(css("#chat-send")),
		chromedp.WaitVisible(css(`.msg.answer[data-done="true"] .chip`)),
		chromedp.Click(css(".msg.answer .chip")), chromedp.WaitVisible(css("#passage")))
	screenshot(t, ctx, "ui-citation.png")
	mu.Lock()
	defer mu.Unlock()
	if len(exceptions) > 0 {
		t.Errorf("the page threw: %v", exceptions)
	}
}

// screenshot writes the page to $QUARRY_ARTIFACTS/name when it is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("QUARRY_ARTIFACTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}
