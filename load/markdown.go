package load

import (
	"regexp"
	"strings"

	"github.com/quarry-rag/quarry/split"
)

// linkDefinition is a Markdown link reference definition line:
// "[Chapter 2]: ch02-00-guessing-game.html" or `[id]: <url> "title"`.
var linkDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:[ \t]*\S`)

// stripMarkdownMarkup blanks what a Markdown file holds for its renderer,
// not its readers: HTML comments (<!-- ignore -->, editors' notes that
// can look like headings), link reference definitions and inline HTML
// tags (<span class="filename">, whose text stays). Code blocks and code
// spans are left alone. Each blanked line keeps its newline, so chunks keep the
// source's line numbers for citations.
func stripMarkdownMarkup(text string) string {
	if !strings.Contains(text, "<") && !strings.Contains(text, "]:") {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	b.Grow(len(text))
	fence := ""        // the open code fence, "" outside one
	inComment := false // inside a multi-line HTML comment
	for _, line := range lines {
		body, nl := strings.CutSuffix(line, "\n")
		trimmed := strings.TrimLeft(body, " ")
		switch {
		case inComment:
			if i := strings.Index(body, "-->"); i >= 0 {
				inComment = false
				body = stripComments(body[i+3:], &inComment)
			} else {
				body = ""
			}
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
		case linkDefinition.MatchString(body):
			body = ""
		case strings.HasPrefix(body, "\t") || strings.HasPrefix(body, "    "):
			body = stripComments(body, &inComment) // perhaps indented code: its tags stay
		default:
			body = split.StripHTMLTags(stripComments(body, &inComment))
		}
		b.WriteString(body)
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// stripComments removes the HTML comments of one line; an unclosed one
// sets *open and takes the rest of the line.
func stripComments(line string, open *bool) string {
	for {
		i := strings.Index(line, "<!--")
		if i < 0 {
			return line
		}
		j := strings.Index(line[i+4:], "-->")
		if j < 0 {
			*open = true
			return strings.TrimRight(line[:i], " \t")
		}
		line = line[:i] + line[i+4+j+3:]
	}
}
