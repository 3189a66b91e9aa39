package sandbox

import (
	"bufio"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
)

// The commands get a private HOME, and under bubblewrap the home directories and /run are
// empty but for an allowlist (allow.go). This table is the second layer: what it names is
// hidden wherever it lies, outside the homes (/etc/shadow, host keys, daemons' sockets) and
// inside what the allowlist binds back (~/.cargo/credentials.toml); in unshare mode, which
// cannot bind anything back, it is the only layer. masks.go says how. A read is enough to
// leak: whatever a command prints or writes into the copy reaches the model, the trajectory
// and the change shown to the user.

// secrets lists what is hidden, with why. A path is one of
//   - "~/rel": rel under each home directory (homeDirs);
//   - "$VAR/rel" or "$VAR": under the variable's value in frognano's environment when it is set
//     to absolute paths (a list such as KUBECONFIG is split at ':'), and, when varDefaults
//     names a default for VAR, under that default in each home directory;
//   - "/abs": that path; '*' matches as in filepath.Glob.
//
// Only what exists when a command starts is hidden: a directory behind an empty read-only
// tmpfs, a file or socket behind an empty read-only file. Devices are never hidden.
var secrets = []struct{ path, why string }{
	// Keys, and the agents that use them on request.
	{"~/.ssh", "private keys; config and known_hosts name the hosts they open"},
	{"$SSH_AUTH_SOCK", "the ssh-agent signs with the user's keys for whoever connects"},
	{"$GNUPGHOME", "GnuPG private keys"},
	{"$PASSWORD_STORE_DIR", "pass, the password store"},
	{"$XDG_DATA_HOME/keyrings", "GNOME keyring"},
	{"$XDG_DATA_HOME/kwalletd", "KDE wallet"},
	{"~/.pki", "the NSS database: client certificates and their keys"},
	{"$XDG_CONFIG_HOME/op", "1Password CLI"},
	{"~/.op", "1Password CLI, older versions"},
	{"$XDG_CONFIG_HOME/sops", "age keys of sops"},

	// Clouds, clusters, containers, infrastructure.
	{"~/.aws", "AWS credentials and SSO token cache"},
	{"$AWS_SHARED_CREDENTIALS_FILE", "AWS credentials elsewhere"},
	{"$AWS_CONFIG_FILE", "AWS profiles, which may hold keys"},
	{"$AZURE_CONFIG_DIR", "Azure CLI tokens"},
	{"$XDG_CONFIG_HOME/gcloud", "Google Cloud credentials"},
	{"$CLOUDSDK_CONFIG", "Google Cloud credentials elsewhere"},
	{"~/.boto", "gsutil and boto keys"},
	{"~/.s3cfg", "s3cmd keys"},
	{"~/.oci", "Oracle Cloud keys"},
	{"$XDG_CONFIG_HOME/doctl", "DigitalOcean token"},
	{"$XDG_CONFIG_HOME/rclone", "rclone: credentials of every remote"},
	{"~/.kube", "Kubernetes cluster credentials"},
	{"$KUBECONFIG", "Kubernetes cluster credentials elsewhere"},
	{"$DOCKER_CONFIG", "registry logins (config.json auths)"},
	{"$XDG_CONFIG_HOME/containers/auth.json", "Podman and Buildah registry logins"},
	{"~/.vault-token", "HashiCorp Vault token"},
	{"~/.terraform.d", "Terraform Cloud token (credentials.tfrc.json)"},
	{"~/.terraformrc", "Terraform CLI configuration, which may hold tokens"},

	// Forges, git, package registries.
	{"$XDG_CONFIG_HOME/gh", "GitHub CLI token (hosts.yml)"},
	{"$GH_CONFIG_DIR", "GitHub CLI token elsewhere"},
	{"$XDG_CONFIG_HOME/hub", "hub's GitHub token"},
	{"$XDG_CONFIG_HOME/glab-cli", "GitLab CLI token"},
	{"$XDG_CONFIG_HOME/github-copilot", "GitHub Copilot tokens"},
	{"~/.netrc", "logins for curl, git, pip, heroku and more"},
	{"$NETRC", "logins elsewhere"},
	{"~/.git-credentials", "git's credential store"},
	{"$XDG_CONFIG_HOME/git/credentials", "git's credential store, XDG location"},
	{"~/.npmrc", "npm registry tokens"},
	{"$NPM_CONFIG_USERCONFIG", "npm registry tokens elsewhere"},
	{"~/.yarnrc", "Yarn 1 registry tokens"},
	{"~/.yarnrc.yml", "Yarn 2+ registry tokens"},
	{"~/.pypirc", "PyPI upload tokens"},
	{"$CARGO_HOME/credentials", "crates.io token, old name"},
	{"$CARGO_HOME/credentials.toml", "crates.io token"},
	{"$GRADLE_USER_HOME/gradle.properties", "Gradle repository and signing credentials"},
	{"~/.m2/settings.xml", "Maven repository passwords"},
	{"~/.m2/settings-security.xml", "Maven's master password"},
	{"~/.gem/credentials", "RubyGems API key"},
	{"~/.composer/auth.json", "Composer tokens"},
	{"$XDG_CONFIG_HOME/composer/auth.json", "Composer tokens, XDG location"},
	{"~/.nuget/NuGet/NuGet.Config", "NuGet feed credentials"},
	{"$XDG_CONFIG_HOME/NuGet/NuGet.Config", "NuGet feed credentials, XDG location"},

	// Model hubs and AI tools: this project's users have them.
	{"~/.ollama/id_ed25519", "Ollama's private key: pushes to ollama.com as the user"},
	{"$HF_HOME/token", "Hugging Face token"},
	{"$HF_HOME/stored_tokens", "Hugging Face tokens, all of them"},
	{"~/.huggingface/token", "Hugging Face token, old location"},
	{"~/.kaggle/kaggle.json", "Kaggle API key"},
	{"~/.claude", "Claude Code: credentials and past sessions"},
	{"~/.claude.json", "Claude Code: account"},
	{"~/.codex", "Codex CLI: auth.json and past sessions"},
	{"~/.gemini", "Gemini CLI: credentials"},

	// Databases.
	{"~/.pgpass", "PostgreSQL passwords"},
	{"$PGPASSFILE", "PostgreSQL passwords elsewhere"},
	{"~/.my.cnf", "MySQL passwords"},

	// Histories: tokens typed on command lines, passwords at prompts, pasted text.
	{"~/.bash_history", "shell history"},
	{"~/.zsh_history", "shell history"},
	{"~/.histfile", "shell history (zsh's usual alternative)"},
	{"~/.sh_history", "shell history"},
	{"$HISTFILE", "shell history elsewhere"},
	{"$XDG_DATA_HOME/fish/fish_history", "shell history"},
	{"~/.python_history", "REPL history"},
	{"~/.node_repl_history", "REPL history"},
	{"~/.psql_history", "SQL history, passwords set in it"},
	{"~/.mysql_history", "SQL history, passwords set in it"},
	{"~/.sqlite_history", "SQL history"},
	{"~/.rediscli_history", "Redis history, AUTH commands"},
	{"~/.lesshst", "less search history"},
	{"~/.viminfo", "Vim registers and history"},
	{"$XDG_DATA_HOME/nvim/shada", "Neovim registers and history (0.7)"},
	{"$XDG_STATE_HOME/nvim/shada", "Neovim registers and history (0.8+)"},

	// Browsers and mail: saved passwords and session cookies.
	{"~/.mozilla", "Firefox profiles"},
	{"~/.thunderbird", "Thunderbird profiles"},
	{"$XDG_CONFIG_HOME/google-chrome", "Chrome profiles"},
	{"$XDG_CONFIG_HOME/chromium", "Chromium profiles"},
	{"$XDG_CONFIG_HOME/BraveSoftware", "Brave profiles"},

	// The machine's own, which root (as which frognano may run) reads without capabilities.
	{"/etc/shadow", "password hashes"},
	{"/etc/shadow-", "password hashes, backup"},
	{"/etc/gshadow", "group password hashes"},
	{"/etc/gshadow-", "group password hashes, backup"},
	{"/etc/ssh/ssh_host_*_key", "the SSH server's private keys"},
	{"/etc/ssl/private", "TLS private keys"},

	// Sockets. A read-only mount does not stop connect(2), and the network namespace does not
	// cover sockets in the file system: through these a command would act outside the sandbox.
	{"/run/user", "each user's runtime directory: ssh and gpg agents, session D-Bus, keyrings"},
	{"/run/docker.sock", "Docker: root on the machine"},
	{"/var/run/docker.sock", "Docker, older path"},
	{"/run/containerd/containerd.sock", "containerd: root on the machine"},
	{"/run/podman/podman.sock", "Podman's system service"},
	{"/run/dbus/system_bus_socket", "system D-Bus: systemd obeys uid 0 there"},
	{"/run/systemd/private", "systemd's own socket, for root"},
}

// varDefaults are where the variables in secrets point when unset, under each home.
var varDefaults = map[string]string{
	"XDG_CONFIG_HOME":    ".config",
	"XDG_DATA_HOME":      ".local/share",
	"XDG_STATE_HOME":     ".local/state",
	"GNUPGHOME":          ".gnupg",
	"PASSWORD_STORE_DIR": ".password-store",
	"AZURE_CONFIG_DIR":   ".azure",
	"DOCKER_CONFIG":      ".docker",
	"CARGO_HOME":         ".cargo",
	"GRADLE_USER_HOME":   ".gradle",
	"HF_HOME":            ".cache/huggingface",
}

// homeDirs are the home directories whose secrets are hidden: frognano's HOME, the current
// user's and SUDO_USER's in the user database, and the home of every account in /etc/passwd
// that can log in (root reads them all; other users simply do not find what they cannot
// read). Accounts with nologin or false as their shell are daemons' (/bin, /usr/sbin, /):
// skipping them saves hundreds of lookups per command. Directories only.
func homeDirs(getenv func(string) string) []string {
	homes := []string{getenv("HOME")}
	if u, err := user.Current(); err == nil {
		homes = append(homes, u.HomeDir)
	}
	if name := getenv("SUDO_USER"); name != "" {
		if u, err := user.Lookup(name); err == nil {
			homes = append(homes, u.HomeDir)
		}
	}
	if f, err := os.Open("/etc/passwd"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Split(sc.Text(), ":"); len(fields) >= 7 && canLogIn(fields[6]) {
				homes = append(homes, fields[5])
			}
		}
		f.Close()
	}
	var dirs []string
	seen := map[string]bool{}
	for _, h := range homes {
		if !filepath.IsAbs(h) || seen[filepath.Clean(h)] {
			continue
		}
		seen[filepath.Clean(h)] = true
		if isDir(h) {
			dirs = append(dirs, filepath.Clean(h))
		}
	}
	return dirs
}

// canLogIn reports whether shell, an /etc/passwd shell field, lets its account log in.
func canLogIn(shell string) bool {
	switch filepath.Base(shell) {
	case "nologin", "false", "sync", "halt", "shutdown":
		return false
	}
	return true
}

// secretCandidates expands the secrets table for homes and the environment into absolute
// paths (globs left in), whether or not they exist. A variable set to something broad
// (DOCKER_CONFIG=$HOME, say) must not hide a home, a system directory or a PATH entry as a
// whole: those are left out. A folder that merely holds a PATH entry (~/.aws/bin) is hidden
// all the same: under bubblewrap the entry is bound back below the mask (allowBinds).
func secretCandidates(homes []string, getenv func(string) string) []string {
	var out []string
	seen := map[string]bool{}
	keep := append(slices.Clone(homes), systemDirs...)
	path := filepath.SplitList(getenv("PATH"))
	add := func(p string) {
		if p = filepath.Clean(p); filepath.IsAbs(p) && p != "/" && !seen[p] && !holds(p, keep) && !containedBy(p, path, true) {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, s := range secrets {
		switch {
		case strings.HasPrefix(s.path, "~/"):
			for _, h := range homes {
				add(filepath.Join(h, s.path[2:]))
			}
		case strings.HasPrefix(s.path, "$"):
			name, rest, _ := strings.Cut(s.path[1:], "/")
			for _, v := range filepath.SplitList(getenv(name)) {
				if filepath.IsAbs(v) {
					add(filepath.Join(v, rest))
				}
			}
			if def, ok := varDefaults[name]; ok {
				for _, h := range homes {
					add(filepath.Join(h, def, rest))
				}
			}
		default:
			add(s.path)
		}
	}
	return out
}

// mask is one secret that exists: its real path, and whether it is a directory.
type mask struct {
	path string
	dir  bool
}

// presentSecrets are the candidates that exist now as directories, files or sockets, with
// symlinks resolved (a link's target is what holds the secret, and bwrap mounts on real
// paths) and duplicates dropped. It runs before each command; remembering which directories
// are missing (most homes have no ~/.local/share/nvim, say) keeps it to a couple of hundred
// lstat calls: about 0.6 ms here, against 20-60 ms for starting the sandbox.
func presentSecrets(candidates []string) []mask {
	var out []mask
	seen := map[string]bool{}
	exists := map[string]bool{"/": true}
	var dirExists func(d string) bool
	dirExists = func(d string) bool {
		e, ok := exists[d]
		if !ok {
			if e = dirExists(filepath.Dir(d)); e {
				_, err := os.Lstat(d)
				e = err == nil
			}
			exists[d] = e
		}
		return e
	}
	for _, c := range candidates {
		paths := []string{c}
		if strings.ContainsAny(c, "*?[") {
			paths, _ = filepath.Glob(c)
		}
		for _, p := range paths {
			if !dirExists(filepath.Dir(p)) {
				continue
			}
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil || real == "/" || seen[real] {
				continue // a dangling link holds nothing
			}
			st, err := os.Stat(real)
			if err != nil || !(st.IsDir() || st.Mode().IsRegular() || st.Mode()&os.ModeSocket != 0) {
				continue // not devices: HISTFILE=/dev/null must not take /dev/null away
			}
			seen[real] = true
			out = append(out, mask{path: real, dir: st.IsDir()})
		}
	}
	return out
}
