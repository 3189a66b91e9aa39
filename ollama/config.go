package ollama

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"
)

// Defaults, documented in the README's configuration reference.
const (
	DefaultModel = "frognano:4b"
	// DefaultNumCtx is the context FrogNano was evaluated with; it is sent on every request
	// because Ollama's own default is small and truncates prompts silently.
	DefaultNumCtx = 65536
	DefaultHost   = "http://127.0.0.1:11434"
)

// Config says which Ollama and which model frognano uses. Zero fields take the defaults.
type Config struct {
	Host   string // OLLAMA_HOST: host, host:port or URL
	Model  string // FROGNANO_MODEL
	NumCtx int    // FROGNANO_NUM_CTX
}

// ConfigFromEnv reads OLLAMA_HOST, FROGNANO_MODEL and FROGNANO_NUM_CTX.
func ConfigFromEnv() (Config, error) {
	c := Config{Host: os.Getenv("OLLAMA_HOST"), Model: os.Getenv("FROGNANO_MODEL")}
	if s := os.Getenv("FROGNANO_NUM_CTX"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("FROGNANO_NUM_CTX=%q is not a positive number of tokens", s)
		}
		c.NumCtx = n
	}
	return c.WithDefaults(), nil
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.NumCtx == 0 {
		c.NumCtx = DefaultNumCtx
	}
	return c
}

// BaseURL parses Host the way Ollama's own clients read OLLAMA_HOST: scheme defaults to
// http, port to 11434.
func (c Config) BaseURL() (*url.URL, error) {
	h := strings.TrimSpace(c.WithDefaults().Host)
	if !strings.Contains(h, "://") {
		h = "http://" + h
	}
	u, err := url.Parse(h)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("OLLAMA_HOST=%q is not a host, host:port or URL", c.Host)
	}
	if u.Port() == "" {
		port := "11434"
		if u.Scheme == "https" {
			port = "443"
		}
		u.Host = net.JoinHostPort(u.Hostname(), port)
	}
	return u, nil
}

// SameServer reports whether two hosts, each as OLLAMA_HOST or a base URL, name the same
// Ollama server from this machine: the same scheme and port, and the same host name up to
// case, with every loopback name (localhost, 127.0.0.0/8, ::1) and the any-address
// (0.0.0.0, ::, what OLLAMA_HOST holds on a machine whose server listens everywhere) taken
// as this machine. A registry written through "localhost" is then found by an editor set to
// "127.0.0.1". Hosts that do not parse are the same only when their text is.
func SameServer(a, b string) bool {
	ua, errA := Config{Host: a}.BaseURL()
	ub, errB := Config{Host: b}.BaseURL()
	if errA != nil || errB != nil {
		return a == b
	}
	if !strings.EqualFold(ua.Scheme, ub.Scheme) || ua.Port() != ub.Port() {
		return false
	}
	return thisMachine(ua.Hostname()) && thisMachine(ub.Hostname()) || strings.EqualFold(ua.Hostname(), ub.Hostname())
}

// thisMachine reports whether a host name always means the local machine.
func thisMachine(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// Client returns an api.Client for Host.
func (c Config) Client() (*api.Client, error) {
	u, err := c.BaseURL()
	if err != nil {
		return nil, err
	}
	return api.NewClient(u, http.DefaultClient), nil
}
