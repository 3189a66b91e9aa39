-- Headless end-to-end test of the plugin, run by nvim_test.go:
--   nvim --headless -u NONE -c 'luafile test/fix_test.lua'
-- against the real `frognano lsp` and a real Ollama serving a scripted model. It exits
-- with :cquit on failure and writes what it saw to $FROGNANO_TEST_OUT.
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

-- Every notification, to check at the end that nothing was deprecated.
local notified_all = {}
local notify_orig = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(notified_all, tostring(msg))
  return notify_orig(msg, level, opts)
end

local ok, err = pcall(function()
  vim.opt.runtimepath:prepend(assert(os.getenv('FROGNANO_PLUGIN')))
  vim.cmd('runtime plugin/frognano.lua')
  local frognano = require('frognano')
  frognano.setup({
    cmd = { assert(os.getenv('FROGNANO_BIN')), 'lsp' },
    settings = { numCtx = 16384 },
    preview = true,
  })
  -- The preview asks before applying; the test answers "Apply" and keeps what was shown.
  local preview = require('frognano.preview')
  local asked = {}
  preview.confirm = function(title)
    table.insert(asked, title)
    -- Keep what the user would see: the preview buffer, rendered by Neovim's :TOhtml, for
    -- the test to screenshot.
    local html = os.getenv('FROGNANO_TEST_HTML')
    if html then
      vim.cmd('syntax on')
      -- A Vim script plugin up to 0.9, a Lua one since 0.10; -u NONE loads neither.
      vim.cmd('runtime! plugin/tohtml.vim plugin/tohtml.lua')
      vim.cmd('TOhtml')
      vim.cmd('write! ' .. vim.fn.fnameescape(html))
      vim.cmd('bwipeout!')
    end
    return true
  end
  vim.cmd('filetype on')
  vim.cmd('edit ' .. os.getenv('FROGNANO_PROJECT') .. '/calc_test.go')
  local buf = vim.api.nvim_get_current_buf()
  check(vim.wait(20000, function() return frognano.client(buf) ~= nil end, 50), 'the server did not attach')
  local client = frognano.client(buf)
  local compat = require('frognano.compat')
  check(vim.wait(20000, function() return client.initialized ~= false and not compat.is_stopped(client) end, 50), 'the server did not start')
  say('attached: client ' .. client.id .. ' root ' .. tostring(client.config.root_dir))

  -- The cursor on the failing assertion, then the actions the server offers there.
  vim.fn.search('Add(2, 3)')
  local params = compat.range_params(client, buf)
  params.context = { diagnostics = {} }
  local titles = {}
  local resp = compat.request_sync(client, 'textDocument/codeAction', params, 10000, buf)
  for _, a in ipairs(resp and resp.result or {}) do
    table.insert(titles, a.title .. ' (' .. tostring(a.kind) .. ')')
  end
  say('actions: ' .. table.concat(titles, ' | '))
  check(vim.tbl_contains(titles, 'Fix failing test TestAdd (quickfix.frognano.fixTest)'), 'no "Fix failing test TestAdd" action of its kind')

  -- :FrogNano fix runs the agent; the server's workspace/applyEdit opens calc.go and fixes it.
  vim.cmd('FrogNano fix')
  local fixed = vim.wait(300000, function()
    local b = vim.fn.bufnr('calc.go')
    if b < 0 or not vim.api.nvim_buf_is_loaded(b) then
      return false
    end
    return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n'):find('return a %+ b') ~= nil
  end, 100)
  local messages = vim.fn.execute('messages')
  say('messages: ' .. messages:gsub('\n', ' / '))
  check(fixed, 'calc.go was not fixed within 5 minutes')
  local b = vim.fn.bufnr('calc.go')
  say('calc.go: ' .. table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n'):gsub('\n', ' / '))
  say('preview asked: ' .. table.concat(asked, ' | '))
  say('preview diff: ' .. table.concat(preview.last or {}, ' / '))
  check(#asked == 1, 'the preview did not ask before applying')
  check(table.concat(preview.last or {}, '\n'):find('+\treturn a + b', 1, true) ~= nil, 'the preview diff lacks the fix')
  local progress = table.concat(frognano.history, ' | ')
  say('progress: ' .. progress)
  check(progress:find('Editing calc.go', 1, true) ~= nil, 'no progress message for the edit')

  -- :FrogNano status asks the server about Ollama and the model.
  local notified = {}
  local notify = vim.notify
  vim.notify = function(msg) table.insert(notified, msg) end
  vim.cmd('FrogNano status')
  vim.notify = notify
  say('status: ' .. table.concat(notified, ' / '))
  check(table.concat(notified, ' '):find('Ollama ok 0.17.4', 1, true) ~= nil, ':FrogNano status does not report Ollama')
  check(table.concat(notified, ' '):find('workspace: watching %d+ folders?, next copy ') ~= nil, ':FrogNano status does not report the watched workspace after a run')

  -- :checkhealth frognano
  vim.cmd('checkhealth frognano')
  local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  say('health: ' .. health:gsub('\n', ' / '))
  check(health:find('server binary found') ~= nil, 'checkhealth did not find the binary')
  check(health:find('reachable at') ~= nil, 'checkhealth did not report Ollama')
  check(health:find('language server started: client', 1, true) ~= nil, 'checkhealth did not report the running server')
  check(health:find('fixer present', 1, true) ~= nil, 'checkhealth did not report the model')

  -- Nothing the plugin called is deprecated in this version.
  local said = table.concat(notified_all, ' / ') .. ' / ' .. vim.fn.execute('messages')
  say('version: ' .. tostring(vim.version and vim.version() and vim.version().minor))
  check(not said:lower():find('deprecat'), 'a deprecation warning: ' .. said)
  check(not said:find('position_encoding', 1, true), 'a position_encoding warning: ' .. said)
  finish(true)
end)
if not ok then
  say('ERROR: ' .. tostring(err))
  finish(false)
end
