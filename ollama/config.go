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

// Client returns an api.Client for Host.
func (c Config) Client() (*api.Client, error) {
	u, err := c.BaseURL()
	if err != nil {
		return nil, err
	}
	return api.NewClient(u, http.DefaultClient), nil
}
