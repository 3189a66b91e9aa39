-- Headless test of the plugin's own logic, run by nvim_test.go on every Neovim version:
--   nvim --headless -u NONE -c 'luafile test/plugin_test.lua'
-- Options are validated, :FrogNano completes its subcommands, actions are picked by kind,
-- and on 0.11+ vim.lsp.enable('frognano') starts the real server from lsp/frognano.lua. It
-- needs no model: listing actions never calls one. Exits with :cquit on failure and writes
-- what it saw to $FROGNANO_TEST_OUT.
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
local failed = false
local function check(cond, msg)
  if not cond then
    say('FAIL: ' .. msg)
    failed = true
  end
end

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
  local v = vim.version and vim.version() or { major = 0, minor = 7 }
  say(('neovim %d.%d'):format(v.major, v.minor))

  -- Options: each mistake is an error that names it.
  for _, c in ipairs({
    { { modle = 'x' }, 'unknown option modle' },
    { { cmd = {} }, 'cmd' },
    { { cmd = 'frognano lsp' }, 'cmd' },
    { { preview = 'yes' }, 'preview' },
    { { settings = { numCtx = '16k' } }, 'settings.numCtx' },
    { { settings = { modle = 'x' } }, 'unknown server setting modle' },
    { { settings = { whenBusy = 'wait' } }, 'expected one of reject, queue' },
    { { settings = { actions = { explian = false } } }, 'unknown action explian' },
  }) do
    local ok, e = pcall(frognano.setup, c[1])
    say('setup(' .. vim.inspect(c[1], { newline = ' ', indent = '' }) .. '): ' .. tostring(e))
    check(not ok and tostring(e):find(c[2], 1, true) ~= nil, 'setup(' .. vim.inspect(c[1]) .. ') should fail naming ' .. c[2])
  end
  local good = pcall(frognano.setup, {
    cmd = { assert(os.getenv('FROGNANO_BIN')), 'lsp' },
    settings = { model = 'm', numCtx = 16384, whenBusy = 'queue', actions = { explain = false }, preview = false },
    preview = true,
  })
  check(good, 'a valid setup() failed')

  -- :FrogNano completes its subcommands, implement included.
  local all = vim.fn.getcompletion('FrogNano ', 'cmdline')
  say('completion: ' .. table.concat(all, ' '))
  check(vim.tbl_contains(all, 'implement'), ':FrogNano does not complete implement')
  check(table.concat(vim.fn.getcompletion('FrogNano im', 'cmdline'), ' ') == 'implement', ':FrogNano im does not complete to implement')

  -- Actions are picked by kind, never by title.
  local menu = {
    { title = 'Fix failing test TestAdd', kind = 'quickfix' }, -- another server's, same title
    { title = 'Fix: x', kind = 'quickfix.frognano.fixDiagnostic' },
    { title = 'Repair TestAdd', kind = 'quickfix.frognano.fixTest' },
    { title = 'Explain TestAdd', kind = 'refactor' },
  }
  local fix = frognano.pick(menu, frognano.wanted.fix)
  say('fix picks: ' .. tostring(fix and fix.title))
  check(fix and fix.title == 'Repair TestAdd', 'fix should pick the fixTest kind first')
  check(frognano.pick(menu, frognano.wanted.explain) == nil, 'explain picked another kind')
  check(frognano.kinds.explain == 'source.frognano.explain', 'the generated kinds are not loaded')

  -- 0.11+: vim.lsp.enable with the shipped lsp/frognano.lua.
  if vim.lsp.config and vim.lsp.enable then
    frognano.options.settings = {}
    vim.lsp.config('frognano', { cmd = { assert(os.getenv('FROGNANO_BIN')), 'lsp' } })
    vim.lsp.enable('frognano')
    vim.cmd('filetype on')
    vim.cmd('edit ' .. os.getenv('FROGNANO_PROJECT') .. '/calc.go')
    local buf = vim.api.nvim_get_current_buf()
    local attached = vim.wait(20000, function() return frognano.client(buf) ~= nil end, 50)
    check(attached, 'vim.lsp.enable did not start the server for a Go buffer')
    if attached then
      local client = frognano.client(buf)
      say('vim.lsp.enable: client ' .. client.id .. ' root ' .. tostring(client.root_dir or client.config.root_dir))
      check(client.config.handlers and client.config.handlers['workspace/applyEdit'] ~= nil, 'lsp/frognano.lua lacks the preview handler')
      vim.fn.search('a - b')
      local compat = require('frognano.compat')
      local params = compat.range_params(client, buf)
      params.context = { diagnostics = {}, only = { 'source.frognano' } }
      local resp = compat.request_sync(client, 'textDocument/codeAction', params, 10000, buf)
      local got = {}
      for _, a in ipairs(resp and resp.result or {}) do
        table.insert(got, a.kind .. ' ' .. a.title)
      end
      say('only source.frognano: ' .. table.concat(got, ' | '))
      check(table.concat(got, ' | ') == 'source.frognano.writeTests Write tests for Add | source.frognano.explain Explain Add',
        'the only filter: ' .. table.concat(got, ' | '))
    end
  else
    say('vim.lsp.enable: not in this version')
  end

  local said = table.concat(notified_all, ' / ') .. ' / ' .. vim.fn.execute('messages')
  check(not said:lower():find('deprecat'), 'a deprecation warning: ' .. said)
end)
if not ok then
  say('ERROR: ' .. tostring(err))
  failed = true
end
finish(not failed)
