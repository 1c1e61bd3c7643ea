package bedrock

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"time"
)

// credentials are an AWS access key, with a session token when temporary.
type credentials struct {
	id, secret, token string
}

// signV4 signs req with AWS Signature Version 4 for service in region, at
// now. Signed headers: content-type, host, x-amz-date and, with a session
// token, x-amz-security-token.
func signV4(req *http.Request, body []byte, cred credentials, region, service string, now time.Time) {
	t := now.UTC()
	amzDate := t.Format("20060102T150405Z")
	day := t.Format("20060102")
	req.Header.Set("X-Amz-Date", amzDate)
	if cred.token != "" {
		req.Header.Set("X-Amz-Security-Token", cred.token)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	headers := map[string]string{"host": host}
	for _, h := range []string{"content-type", "x-amz-date", "x-amz-security-token"} {
		if v := req.Header.Get(h); v != "" {
			headers[h] = strings.Join(strings.Fields(v), " ")
		}
	}
	names := make([]string, 0, len(headers))
	for h := range headers {
		names = append(names, h)
	}
	sort.Strings(names)
	var canon strings.Builder
	for _, h := range names {
		canon.WriteString(h + ":" + headers[h] + "\n")
	}
	signed := strings.Join(names, ";")
	payload := sha256.Sum256(body)
	request := strings.Join([]string{
		req.Method,
		canonicalURI(req.URL.EscapedPath()),
		canonicalQuery(req.URL.Query()),
		canon.String(),
		signed,
		hex.EncodeToString(payload[:]),
	}, "\n")
	scope := day + "/" + region + "/" + service + "/aws4_request"
	reqHash := sha256.Sum256([]byte(request))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(reqHash[:])
	key := hmacSHA256([]byte("AWS4"+cred.secret), day)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, service)
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+cred.id+"/"+scope+", SignedHeaders="+signed+", Signature="+sig)
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// canonicalURI encodes the already escaped path once more, segment by
// segment, as SigV4 wants for every service but S3.
func canonicalURI(escaped string) string {
	if escaped == "" {
		return "/"
	}
	segs := strings.Split(escaped, "/")
	for i, s := range segs {
		segs[i] = uriEncode(s)
	}
	return strings.Join(segs, "/")
}

func canonicalQuery(q map[string][]string) string {
	var parts []string
	for k, vs := range q {
		for _, v := range vs {
			parts = append(parts, uriEncode(k)+"="+uriEncode(v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "&")
}

// uriEncode escapes everything but the unreserved characters.
func uriEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	return b.String()
}
