-- :checkhealth frognano
local M = {}

local health = vim.health or require('health')
local ok, warn, err, info = health.ok or health.report_ok, health.warn or health.report_warn,
  health.error or health.report_error, health.info or health.report_info
local start = health.start or health.report_start

function M.check()
  start('frognano')
  local cfg = require('frognano').options
  local exe = cfg.cmd[1]
  if vim.fn.executable(exe) == 1 then
    ok('server binary found: ' .. vim.fn.exepath(exe))
  else
    err('server binary not found: ' .. exe, { 'build it with `go build -o ~/bin/frognano ./cmd/frognano` and put it on PATH, or set cmd in setup()' })
    return
  end
  local version = vim.fn.system({ exe, 'version' })
  if vim.v.shell_error == 0 then
    ok('server runs: ' .. vim.trim(version))
  else
    err('`' .. exe .. ' version` failed: ' .. vim.trim(version))
    return
  end
  -- The server's own doctor checks Ollama, the model and the sandbox.
  local report = vim.fn.system({ exe, 'doctor' })
  for _, line in ipairs(vim.split(report, '\n')) do
    local status, rest = line:match('^(%S+)%s+(.*)$')
    if status == 'ok' then
      ok(rest)
    elseif status == 'FAIL' then
      err(rest)
    elseif status == 'warn' then
      warn(rest)
    elseif status == 'info' or status == 'skip' then
      info(rest)
    elseif line:match('^%s+fix:') then
      info(vim.trim(line))
    end
  end
  local running = {}
  for _, c in ipairs(require('frognano.compat').clients()) do
    if not require('frognano.compat').is_stopped(c) then
      table.insert(running, 'client ' .. c.id .. ' for ' .. tostring(c.config.root_dir))
    end
  end
  if #running > 0 then
    ok('language server started: ' .. table.concat(running, ', '))
  else
    info('language server not started yet: it starts with the first ' .. table.concat(cfg.filetypes, '/') .. ' buffer')
  end
end

return M
