-- Headless end-to-end test of fine-tuning in the plugin, run by nvim_test.go: against the
-- real `frognano lsp` and a real fine-tuning daemon (started by the Go test with a schedule
-- that keeps it waiting), it checks :FrogNano status, :FrogNano finetune stop, :FrogNano
-- finetune start without the weights setting, and :FrogNano finetune report. It exits with
-- :cquit on failure and writes what it saw to $FROGNANO_TEST_OUT.
local out = assert(os.getenv('FROGNANO_TEST_OUT'))
local log = {}
local function say(...)
  table.insert(log, table.concat(vim.tbl_map(tostring, { ... }), ' '))
end
local function finish(ok)
  local f = assert(io.open(out, 'w'))
  f:write(table.concat(log, '\n') .. '\n')
  f:close()
  vim.cmd(ok and 'qall!' or 'cquit! 1')
end
local function check(cond, msg)
  if not cond then
    say('FAIL: ' .. msg)
    finish(false)
    error(msg)
  end
end

local notified = {}
local notify_orig = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(notified, tostring(msg))
  return notify_orig(msg, level, opts)
end
local function notified_with(s)
  for _, m in ipairs(notified) do
    if m:find(s, 1, true) then
      return m
    end
  end
end

local ok, err = pcall(function()
  vim.opt.runtimepath:prepend(assert(os.getenv('FROGNANO_PLUGIN')))
  vim.cmd('runtime plugin/frognano.lua')
  local frognano = require('frognano')
  frognano.setup({ cmd = { assert(os.getenv('FROGNANO_BIN')), 'lsp' } })
  -- The report goes to the browser: the test keeps the path instead.
  local opened = {}
  frognano.open = function(target)
    table.insert(opened, target)
    return true
  end
  vim.cmd('filetype on')
  vim.cmd('edit ' .. os.getenv('FROGNANO_PROJECT') .. '/calc.go')
  local buf = vim.api.nvim_get_current_buf()
  check(vim.wait(20000, function() return frognano.client(buf) ~= nil end, 50), 'the server did not attach')
  local client = frognano.client(buf)
  local compat = require('frognano.compat')
  check(vim.wait(20000, function() return client.initialized ~= false and not compat.is_stopped(client) end, 50), 'the server did not start')

  local completion = vim.fn.getcompletion('FrogNano finetune ', 'cmdline')
  say('completion: ' .. table.concat(completion, ' '))
  check(table.concat(completion, ' ') == 'start stop report', 'finetune does not complete its subcommands')
  -- An error notified inside a command is also the command's error: pcall keeps it.
  pcall(vim.cmd, 'FrogNano finetune bogus')
  check(notified_with(':FrogNano finetune start|stop|report, not bogus') ~= nil, 'a wrong finetune subcommand does not say the right ones')

  local function status()
    local n = #notified
    vim.cmd('FrogNano status')
    return table.concat(vim.list_slice(notified, n + 1), ' / ')
  end
  -- The daemon the Go test started, waiting for its hours.
  local st = status()
  say('status running: ' .. st)
  check(st:find('fine-tuning: running (pid ' .. os.getenv('FROGNANO_DAEMON_PID') .. ')', 1, true) ~= nil, ':FrogNano status does not show the running daemon')
  check(st:find('waiting: ', 1, true) ~= nil, ':FrogNano status does not say what the daemon waits for')

  local done
  frognano.finetune('stop', function(e, r) done = { err = e, result = r } end)
  check(vim.wait(90000, function() return done ~= nil end, 50), 'stop did not answer')
  check(done.err == nil, 'stop failed: ' .. vim.inspect(done.err))
  say('stop: pid ' .. tostring(done.result.pid))
  st = status()
  say('status stopped: ' .. st)
  check(st:find('fine-tuning: stopped (', 1, true) ~= nil, ':FrogNano status does not show the stopped daemon')

  -- Start (the daemon is stopped) without the weights setting: the error names the setting.
  vim.cmd('FrogNano finetune start')
  check(vim.wait(20000, function() return notified_with('frognano.finetune.weights') ~= nil end, 50), 'start without weights gave no message naming the setting')
  say('start: ' .. notified_with('frognano.finetune.weights'))

  vim.cmd('FrogNano finetune report')
  check(vim.wait(30000, function() return #opened > 0 end, 50), 'the report was not opened')
  say('report: ' .. opened[1])
  finish(true)
end)
if not ok then
  say('ERROR: ' .. tostring(err))
  finish(false)
end
