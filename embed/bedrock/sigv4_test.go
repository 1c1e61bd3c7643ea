package bedrock

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// The worked example of AWS's Signature Version 4 documentation (IAM
// ListUsers).
func TestSignV4DocumentationExample(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08", nil)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	at := time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)
	signV4(req, nil, credentials{id: "AKIDEXAMPLE", secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}, "us-east-1", "iam", at)
	want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
	if got := req.Header.Get("Authorization"); got != want {
		t.Errorf("Authorization\n got %s\nwant %s", got, want)
	}
	if req.Header.Get("X-Amz-Date") != "20150830T123600Z" {
		t.Errorf("X-Amz-Date %s", req.Header.Get("X-Amz-Date"))
	}
}

func TestCanonicalURIDoubleEncodes(t *testing.T) {
	if got := canonicalURI("/model/amazon.titan-embed-text-v2%3A0/invoke"); got != "/model/amazon.titan-embed-text-v2%253A0/invoke" {
		t.Errorf("%s", got)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://h/model/a%3A0/invoke", nil)
	signV4(req, []byte("{}"), credentials{id: "A", secret: "S", token: "T"}, "eu-west-1", "bedrock", time.Now())
	if !strings.Contains(req.Header.Get("Authorization"), "SignedHeaders=host;x-amz-date;x-amz-security-token") || req.Header.Get("X-Amz-Security-Token") != "T" {
		t.Errorf("%v", req.Header)
	}
}
