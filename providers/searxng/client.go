package searxng

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of the HTTP client.
const (
	// maxBodyBytes caps an answer; a longer one is an error, not cut.
	maxBodyBytes = 8 << 20
	// maxRedirects is the most redirects one search follows.
	maxRedirects = 3
	// errorBodyBytes is how much of an unexpected answer a message quotes.
	errorBodyBytes = 200
)

// errTimedOut is the cause of a search's context when timeout_secs passed.
var errTimedOut = errors.New("searxng: timeout_secs passed")

// instanceError is a failure of the instance, or of reaching it, that the
// operator or the model can act on: CallTool returns its text as an
// isError result.
type instanceError struct{ msg string }

func (e *instanceError) Error() string { return e.msg }

func instanceErrorf(format string, a ...any) *instanceError {
	return &instanceError{msg: fmt.Sprintf(format, a...)}
}

// redirectError is returned by checkRedirect to stop a redirect; msg says
// why and what to change.
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }

// client sends searches to one instance. It is safe for concurrent use.
type client struct {
	hc          *http.Client
	base        *url.URL // the instance's root, no trailing slash
	timeout     time.Duration
	timeoutSecs int   // for messages: the configured timeout_secs
	maxBody     int64 // maxBodyBytes; tests lower it
	userAgent   string
}

// newClient returns a client for the configured instance with its own
// transport: no proxy (the provider has no environment to take one
// from), bounded redirects, TLS 1.2 or later.
func newClient(cfg settings) *client {
	transport := &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          8,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
	}
	c := &client{
		base:        cfg.base,
		timeout:     cfg.timeout(),
		timeoutSecs: cfg.timeoutSecs,
		maxBody:     maxBodyBytes,
		userAgent:   "openhuman-host-searxng/" + Version,
	}
	c.hc = &http.Client{Transport: transport, CheckRedirect: c.checkRedirect}
	return c
}

// closeIdle closes the client's idle connections.
func (c *client) closeIdle() { c.hc.CloseIdleConnections() }

// endpoint is the instance as messages name it: scheme://host[:port].
func (c *client) endpoint() string { return endpoint(c.base) }

// checkRedirect follows at most maxRedirects redirects, each keeping the
// scheme of the first request: no https→http downgrade, and no silent
// switch from http to https either, which base_url should say.
func (c *client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return &redirectError{msg: fmt.Sprintf("SearXNG at %s redirected more than %d times (last to %s): set %s %s to the instance's final address",
			c.endpoint(), maxRedirects, endpoint(req.URL), table, keyBaseURL)}
	}
	from := via[0].URL.Scheme
	if to := req.URL.Scheme; to != from {
		if from == "https" {
			return &redirectError{msg: fmt.Sprintf("SearXNG at %s redirected from https to plain http (%s); refused. Fix the instance's redirect or its server.base_url",
				c.endpoint(), endpoint(req.URL))}
		}
		return &redirectError{msg: fmt.Sprintf("SearXNG at %s redirected to %s: set %s %s to %s",
			c.endpoint(), endpoint(req.URL), table, keyBaseURL, endpoint(req.URL)+c.base.Path)}
	}
	if !strings.EqualFold(hostPort(req.URL), hostPort(via[0].URL)) {
		// Only the configured origin is trusted with the query; a redirect
		// elsewhere could send it (and what comes back) anywhere.
		return &redirectError{msg: fmt.Sprintf("SearXNG at %s redirected to another host (%s); refused: only redirects within %s are followed. If the instance moved, set %s %s to %s",
			c.endpoint(), endpoint(req.URL), c.endpoint(), table, keyBaseURL, endpoint(req.URL)+c.base.Path)}
	}
	return nil
}

// hostPort is u's host and port, the port made explicit when it is the
// scheme's default.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// searchURL builds <base_url>/search?q=…&format=json[&categories=a,b][&language=…]
// with its parameters in that order.
func (c *client) searchURL(a searchArgs) string {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + "/search"
	u.RawPath = ""
	var q strings.Builder
	q.WriteString("q=")
	q.WriteString(url.QueryEscape(a.Query))
	q.WriteString("&format=json")
	if len(a.Categories) > 0 {
		q.WriteString("&categories=")
		for i, cat := range a.Categories {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(url.QueryEscape(cat))
		}
	}
	if a.Language != "" {
		q.WriteString("&language=")
		q.WriteString(url.QueryEscape(a.Language))
	}
	u.RawQuery = q.String()
	u.Fragment = ""
	return u.String()
}

// search runs one search and returns the instance's decoded answer. An
// *instanceError says what went wrong in words the operator can act on;
// any other error is the caller's context ending (the client cancelled,
// or the host's deadline passed).
func (c *client) search(ctx context.Context, a searchArgs) (*rawResponse, int, error) {
	reqCtx, cancel := context.WithTimeoutCause(ctx, c.timeout, errTimedOut)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, c.searchURL(a), nil)
	if err != nil {
		return nil, 0, instanceErrorf("cannot build a request for %s: %v; check %s %s", c.endpoint(), err, table, keyBaseURL)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, 0, c.requestError(ctx, reqCtx, err)
	}
	defer resp.Body.Close()

	switch status := resp.StatusCode; {
	case status == http.StatusForbidden:
		return nil, status, instanceErrorf("SearXNG at %s answered HTTP 403 Forbidden: the instance has the JSON format disabled. "+
			"Add json to search.formats in the instance's settings.yml (search: formats: [html, json]) and restart it", c.endpoint())
	case status == http.StatusTooManyRequests:
		wait := "Wait a minute and try again"
		if secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && secs > 0 {
			wait = fmt.Sprintf("Wait %d seconds (its Retry-After) and try again", secs)
		}
		return nil, status, instanceErrorf("SearXNG at %s answered HTTP 429 Too Many Requests: the instance's limiter rate-limited this search. "+
			"%s, or, on an instance you run, set server.limiter: false in its settings.yml (public instances usually refuse API clients; use your own)",
			c.endpoint(), wait)
	case status < 200 || status > 299:
		prefix, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
		msg := fmt.Sprintf("SearXNG at %s answered HTTP %s", c.endpoint(), statusText(status))
		if text := cleanErrorBody(prefix); text != "" {
			msg += ": " + text
		}
		if status == http.StatusNotFound {
			msg += fmt.Sprintf(" (is %s %s the SearXNG root?)", table, keyBaseURL)
		}
		return nil, status, &instanceError{msg: msg}
	}

	if resp.ContentLength > c.maxBody {
		return nil, resp.StatusCode, c.tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, resp.StatusCode, c.requestError(ctx, reqCtx, err)
	}
	if int64(len(body)) > c.maxBody {
		return nil, resp.StatusCode, c.tooLarge()
	}
	raw, err := decodeResponse(body, resp.Header.Get("Content-Type"))
	if err != nil {
		return nil, resp.StatusCode, instanceErrorf("SearXNG at %s did not answer JSON (is %s %s the SearXNG root?): %v",
			c.endpoint(), table, keyBaseURL, err)
	}
	return raw, resp.StatusCode, nil
}

func (c *client) tooLarge() error {
	size := fmt.Sprintf("%d bytes", c.maxBody)
	if c.maxBody%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", c.maxBody>>20)
	}
	return instanceErrorf("SearXNG at %s sent an answer larger than %s; refused (is %s %s the SearXNG root?)",
		c.endpoint(), size, table, keyBaseURL)
}

// requestError turns a failed request or body read into an
// *instanceError, or returns the caller's context error when ctx ended.
func (c *client) requestError(ctx, reqCtx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("search stopped: %w", context.Cause(ctx))
	}
	var redirect *redirectError
	if errors.As(err, &redirect) {
		return &instanceError{msg: redirect.msg}
	}
	var netErr net.Error
	if errors.Is(context.Cause(reqCtx), errTimedOut) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return instanceErrorf("SearXNG at %s gave no answer within %ds (%s %s): the instance or its engines are slow or stuck. "+
			"Try again, raise timeout_secs, or lower the instance's outgoing.request_timeout", c.endpoint(), c.timeoutSecs, table, keyTimeoutSecs)
	}
	// The url.Error around err quotes the request's URL, query included:
	// keep only what it wraps.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return instanceErrorf("cannot reach %s: is SearXNG running? (%s %s)", c.endpoint(), table, keyBaseURL)
	case errors.As(err, &dnsErr):
		return instanceErrorf("cannot reach %s: its host name does not resolve (%v); check %s %s", c.endpoint(), dnsErr.Err, table, keyBaseURL)
	case errors.As(err, &certErr), errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr):
		return instanceErrorf("cannot reach %s: its TLS certificate is not trusted (%v); use a trusted certificate, or http:// on loopback, in %s %s",
			c.endpoint(), err, table, keyBaseURL)
	case errors.As(err, &recordErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http replaces the tls.RecordHeaderError with a plain error.
		return instanceErrorf("cannot reach %s: it does not speak TLS; use http:// in %s %s", c.endpoint(), table, keyBaseURL)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return instanceErrorf("SearXNG at %s closed the connection before answering in full; try again, and check the instance's log", c.endpoint())
	}
	return instanceErrorf("cannot reach %s: %v (%s %s)", c.endpoint(), err, table, keyBaseURL)
}

// statusText is "404 Not Found", or the bare code when Go knows no text.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return strconv.Itoa(code)
}

// cleanErrorBody makes the start of an error answer fit a message: valid
// UTF-8 without control characters, whitespace collapsed, at most
// errorBodyBytes bytes.
func cleanErrorBody(b []byte) string {
	if len(b) > errorBodyBytes {
		b = b[:errorBodyBytes]
	}
	// A rune cut at the end is dropped, not replaced.
	for len(b) > 0 && !utf8.Valid(b) {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
