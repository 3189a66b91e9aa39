---@mod frognano FrogNano for Neovim
---@brief [[
--- Starts `frognano lsp` for your buffers and adds :FrogNano commands on top of its code
--- actions. Works on Neovim 0.7 (vim.lsp.start_client) and newer (vim.lsp.start); on 0.11+
--- `vim.lsp.enable('frognano')` works too, with the configuration in lsp/frognano.lua.
---@brief ]]
local compat = require('frognano.compat')
local server = require('frognano.server') -- generated from the server's Go declarations

local M = {}

---@class FrogNanoOptions
---@field cmd string[] command that starts the server (default {"frognano", "lsp"})
---@field filetypes string[] buffers to attach to (default: go, python, typescript, javascript and their react variants)
---@field root_markers string[] files that mark a project root (default .git, go.mod, package.json, pyproject.toml)
---@field settings table the server's "frognano" settings (model, numCtx, maxSteps, actions, whenBusy, ...)
---@field progress boolean echo the agent's progress (default true)
---@field preview boolean show FrogNano's change as a diff and ask before applying it (default false)
M.defaults = {
  cmd = { 'frognano', 'lsp' },
  filetypes = { 'go', 'python', 'typescript', 'typescriptreact', 'javascript', 'javascriptreact' },
  root_markers = { '.git', 'go.mod', 'package.json', 'pyproject.toml', 'setup.py' },
  settings = {},
  progress = true,
  preview = false,
}

---@type FrogNanoOptions
M.options = vim.deepcopy(M.defaults)

-- root_dir walks up from the buffer's folder to the first one holding a root marker.
local function root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = name ~= '' and vim.fn.fnamemodify(name, ':p:h') or vim.fn.getcwd()
  while dir and dir ~= '' do
    for _, marker in ipairs(M.options.root_markers) do
      if vim.loop.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      break
    end
    dir = parent
  end
  return vim.fn.getcwd()
end

--- The last progress message per token, for :FrogNano status and statuslines.
M.progress = {}
--- The latest progress lines (at most 200), oldest first.
M.history = {}

local function on_progress(err, result, ctx, config)
  local value = result and result.value or {}
  if value.kind == 'end' then
    M.progress[result.token] = nil
  else
    M.progress[result.token] = (value.title or '') .. (value.message and (': ' .. value.message) or '')
  end
  if M.options.progress and value.kind then
    local text = value.title or value.message or ''
    if value.kind == 'report' then
      text = value.message or ''
    elseif value.kind == 'end' then
      text = 'done' .. (value.message and (': ' .. value.message) or '')
    end
    vim.api.nvim_echo({ { '[FrogNano] ' .. text, 'Comment' } }, false, {})
  end
  if value.kind then
    table.insert(M.history, (value.kind == 'begin' and value.title) or value.message or '')
    if #M.history > 200 then
      table.remove(M.history, 1)
    end
  end
  -- Keep Neovim's own bookkeeping (vim.lsp.util.get_progress_messages, fidget-style plugins).
  local default = vim.lsp.handlers['$/progress']
  if default then
    return default(err, result, ctx, config)
  end
end

--- Opens a file or URL outside Neovim (the fine-tuning report, in the browser): vim.ui.open
--- on 0.10+, else the desktop's opener. Returns whether it started one.
---@param target string
---@return boolean
function M.open(target)
  if vim.ui.open then
    local _, err = vim.ui.open(target)
    return err == nil
  end
  local opener = vim.fn.has('mac') == 1 and 'open' or 'xdg-open'
  if vim.fn.executable(opener) == 0 then
    return false
  end
  return vim.fn.jobstart({ opener, target }, { detach = true }) > 0
end

--- window/showDocument: an external document (the fine-tuning report) goes to M.open; the
--- rest (explanations) to Neovim's own handler, which opens them in a buffer.
function M.show_document(err, result, ctx, config)
  if result and result.external then
    return { success = M.open(vim.uri_to_fname(result.uri)) }
  end
  local default = vim.lsp.handlers['window/showDocument']
  if not default then
    return { success = false }
  end
  return default(err, result, ctx, config)
end

--- The client configuration: for vim.lsp.start (root_dir), vim.lsp.config (root_markers,
--- filetypes; see lsp/frognano.lua), and vim.lsp.start_client on 0.7.
function M.lsp_config()
  return {
    name = 'frognano',
    cmd = M.options.cmd,
    filetypes = M.options.filetypes,
    root_markers = M.options.root_markers,
    init_options = { frognano = M.options.settings },
    settings = { frognano = M.options.settings },
    handlers = {
      ['$/progress'] = on_progress,
      ['workspace/applyEdit'] = require('frognano.preview').handler,
      ['window/showDocument'] = M.show_document,
    },
  }
end

--- Starts (or reuses) the server for a buffer and attaches it.
---@param bufnr integer
---@return integer|nil client id
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local config = M.lsp_config()
  config.root_dir = root_dir(bufnr)
  if vim.lsp.start then
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  -- Neovim 0.7: one client per root, attached buffer by buffer.
  M._clients = M._clients or {}
  local id = M._clients[config.root_dir]
  if not id or not vim.lsp.get_client_by_id(id) then
    id = vim.lsp.start_client(config)
    M._clients[config.root_dir] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
end

--- The frognano client attached to a buffer, if any.
function M.client(bufnr)
  return compat.clients(bufnr or vim.api.nvim_get_current_buf())[1]
end

local function list_of(kind)
  return function(v)
    if type(v) ~= 'table' then
      return false
    end
    for _, x in ipairs(v) do
      if type(x) ~= kind then
        return false
      end
    end
    return true
  end
end

-- validate checks setup()'s options, and the server settings in them against the server's
-- own declarations, so that a typo is an error at once rather than a setting silently
-- ignored.
local function validate(opts)
  compat.validate('opts', opts, 'table', true)
  if opts == nil then
    return
  end
  for k in pairs(opts) do
    if M.defaults[k] == nil then
      local known = vim.tbl_keys(M.defaults)
      table.sort(known)
      error('unknown option ' .. tostring(k) .. ' (options: ' .. table.concat(known, ', ') .. ')', 0)
    end
  end
  compat.validate('cmd', opts.cmd, function(v)
    return list_of('string')(v) and #v > 0
  end, true, 'a list of strings, the command that starts `frognano lsp`')
  compat.validate('filetypes', opts.filetypes, list_of('string'), true, 'a list of filetypes')
  compat.validate('root_markers', opts.root_markers, list_of('string'), true, 'a list of file names')
  compat.validate('settings', opts.settings, 'table', true)
  compat.validate('progress', opts.progress, 'boolean', true)
  compat.validate('preview', opts.preview, 'boolean', true)
  for k, v in pairs(opts.settings or {}) do
    local decl = server.settings[k]
    if not decl then
      local known = vim.tbl_keys(server.settings)
      table.sort(known)
      error('unknown server setting ' .. tostring(k) .. ' (settings: ' .. table.concat(known, ', ') .. ')', 0)
    end
    compat.validate('settings.' .. k, v, decl.type)
    if decl.enum and not vim.tbl_contains(decl.enum, v) then
      error('settings.' .. k .. ' is ' .. vim.inspect(v) .. '; expected one of ' .. table.concat(decl.enum, ', '), 0)
    end
  end
  for id in pairs((opts.settings or {}).actions or {}) do
    if not M.kinds[id] then
      error('unknown action ' .. tostring(id) .. ' in settings.actions (actions: ' .. table.concat(M.action_ids, ', ') .. ')', 0)
    end
  end
end

---@param opts FrogNanoOptions|nil
function M.setup(opts)
  local ok, err = pcall(validate, opts)
  if not ok then
    -- One message that names the option, not the plugin's file and line.
    error('frognano.setup: ' .. tostring(err):gsub('^.-:%d+: ', ''):gsub('^frognano%.setup: ', ''), 2)
  end
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  local group = vim.api.nvim_create_augroup('frognano', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.options.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
end

--- The kind of each action, by id, and the ids in the server's menu order.
M.kinds, M.action_ids = {}, {}
for _, a in ipairs(server.actions) do
  M.kinds[a.id] = a.kind
  table.insert(M.action_ids, a.id)
end

--- The actions each subcommand runs, in order of preference, by id: picked by kind, never
--- by title (titles are for people and may change).
M.wanted = {
  fix = { 'fixTest', 'fix' },
  implement = { 'implement' },
  tests = { 'tests' },
  explain = { 'explain' },
  ask = { 'ask' },
}

--- The first action of one of ids' kinds (earlier ids win over the menu's order).
function M.pick(actions, ids)
  for _, id in ipairs(ids) do
    for _, a in ipairs(actions or {}) do
      if a.kind == M.kinds[id] then
        return a
      end
    end
  end
end

-- The server's actions of the ids' kinds at the cursor (or the visual selection),
-- synchronously: listing never calls the model, so this is instant.
local function actions_here(client, bufnr, range, ids)
  local params = compat.range_params(client, bufnr, range)
  local only = {}
  for _, id in ipairs(ids) do
    table.insert(only, M.kinds[id])
  end
  params.context = { diagnostics = compat.line_diagnostics(bufnr), only = only }
  local resp = compat.request_sync(client, 'textDocument/codeAction', params, 2000, bufnr)
  return resp and resp.result or {}
end

--- Runs an action through the server's frognano.run (or another frognano command): the
--- server runs the agent with progress and applies the result with workspace/applyEdit.
--- Actions carry their context in data (clients that resolve) or in their command's
--- argument; fields extend it (the instruction of Ask).
local function run(client, action, bufnr, command, fields)
  local data = action.data
  if not data and action.command then
    data = (action.command.arguments or {})[1]
  end
  if not data then
    vim.notify('FrogNano: this action carries no data', vim.log.levels.ERROR)
    return
  end
  data = vim.tbl_extend('force', vim.deepcopy(data), fields or {})
  compat.request(client, 'workspace/executeCommand', { command = command or 'frognano.run', arguments = { data } }, function(err)
    if err and err.code ~= -32800 then
      vim.notify('FrogNano: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end, bufnr)
end

local function find(bufnr, range, ids)
  local client = M.client(bufnr)
  if not client then
    vim.notify('FrogNano: the server is not attached to this buffer (see :checkhealth frognano)', vim.log.levels.WARN)
    return
  end
  return client, M.pick(actions_here(client, bufnr, range, ids), ids)
end

--- The subcommands of :FrogNano, for its completion.
M.subcommands = { 'ask', 'fix', 'implement', 'tests', 'explain', 'cancel', 'status', 'finetune' }

--- The arguments of :FrogNano finetune, and the server command each runs.
M.finetune_commands = {
  start = 'frognano.finetune.start',
  stop = 'frognano.finetune.stop',
  report = 'frognano.finetune.report',
}
M.finetune_subcommands = { 'start', 'stop', 'report' }

local finetune_titles = { start = 'Start fine-tuning', stop = 'Stop fine-tuning', report = 'Show fine-tuning report' }

--- Starts or stops fine-tuning of the buffer's repository, or shows its report, through the
--- server (which does the work and says how it went with window/showMessage). on_done, if
--- given, gets the error and the command's result.
---@param sub string start, stop or report
---@param on_done fun(err: table|nil, result: table|nil)|nil
function M.finetune(sub, on_done)
  local bufnr = vim.api.nvim_get_current_buf()
  local command = M.finetune_commands[sub]
  if not command then
    vim.notify('FrogNano: :FrogNano finetune ' .. table.concat(M.finetune_subcommands, '|') .. (sub and (', not ' .. tostring(sub)) or ''), vim.log.levels.ERROR)
    return
  end
  local client = M.client(bufnr)
  if not client then
    vim.notify('FrogNano: the server is not attached to this buffer (see :checkhealth frognano)', vim.log.levels.WARN)
    return
  end
  compat.request(client, 'workspace/executeCommand', { command = command }, function(err, result)
    if err then
      vim.notify('FrogNano: ' .. finetune_titles[sub] .. ': ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif sub == 'report' and result and result.path and not result.shown then
      -- A client without window/showDocument (0.7) opens the page itself.
      if not M.open(result.path) then
        vim.notify('FrogNano: the fine-tuning report is ' .. result.path, vim.log.levels.INFO)
      end
    end
    if on_done then
      on_done(err, result)
    end
  end, bufnr)
end

local function percent(x)
  return string.format('%d%%', math.floor(x * 100 + 0.5))
end

--- One line for frognano/status's fineTuning part.
function M.finetune_line(ft)
  local line = 'fine-tuning: ' .. ft.state
  if ft.state == 'off' then
    return line .. ' (:FrogNano finetune start)'
  elseif ft.state == 'running' then
    line = line .. ' (pid ' .. tostring(ft.pid) .. ')'
  else
    line = line .. ' (' .. ((ft.ended and ft.ended ~= '') and ft.ended or 'ended without a word: killed?') .. ')'
  end
  if ft.phase then
    line = line .. ', iteration ' .. tostring(ft.iteration or 0) .. ' ' .. ft.phase .. ' ' .. percent(ft.fraction or 0) .. (ft.detail and (' ' .. ft.detail) or '')
  end
  if ft.waiting then
    line = line .. ', waiting: ' .. ft.waiting
  end
  if ft.heldOutNow then
    line = line .. ', held-out pass rate ' .. percent(ft.heldOutNow) .. (ft.heldOutStart and (' (' .. percent(ft.heldOutStart) .. ' at the start)') or '')
  end
  if ft.lastError then
    line = line .. ', last error: ' .. ft.lastError
  end
  for _, p in ipairs(ft.problems or {}) do
    line = line .. ', problem: ' .. p
  end
  return line
end

--- :FrogNano SUBCOMMAND
function M.command(fargs)
  local sub = fargs[1] or 'status'
  local bufnr = vim.api.nvim_get_current_buf()
  local range
  local mode = vim.fn.mode()
  if mode == 'v' or mode == 'V' then
    range = { vim.api.nvim_buf_get_mark(bufnr, '<'), vim.api.nvim_buf_get_mark(bufnr, '>') }
  end
  if sub ~= 'ask' and M.wanted[sub] then
    local client, action = find(bufnr, range, M.wanted[sub])
    if client and not action then
      vim.notify('FrogNano: nothing to ' .. sub .. ' here', vim.log.levels.INFO)
    elseif action then
      run(client, action, bufnr)
    end
  elseif sub == 'ask' then
    local client, action = find(bufnr, range, M.wanted.ask)
    if not action then
      return
    end
    local instruction = table.concat(vim.list_slice(fargs, 2), ' ')
    local function go(text)
      if text and text ~= '' then
        run(client, action, bufnr, 'frognano.ask', { instruction = text })
      end
    end
    if instruction ~= '' then
      go(instruction)
    else
      vim.ui.input({ prompt = 'Ask FrogNano: ' }, go)
    end
  elseif sub == 'finetune' then
    M.finetune(fargs[2])
  elseif sub == 'cancel' then
    local client = M.client(bufnr)
    if client then
      compat.request(client, 'workspace/executeCommand', { command = 'frognano.cancel' }, function() end, bufnr)
    end
  elseif sub == 'status' then
    local client = M.client(bufnr)
    local lines = { client and ('attached (client ' .. client.id .. ', root ' .. (client.config.root_dir or '?') .. ')') or 'not attached' }
    if client then
      -- frognano/status: the model (fine-tuned or not), and whether Ollama answers and has it.
      local resp = compat.request_sync(client, 'frognano/status', vim.empty_dict(), 4000, bufnr)
      local st = resp and resp.result
      if st then
        -- fineTuned: runs use the model fine-tuning made for this repository, not its base.
        local ft = type(st.fineTuned) == 'table' and st.fineTuned or nil
        local origin = ft and (' (fine-tuned from ' .. ft.base .. ', step ' .. ft.step .. ')') or ''
        table.insert(lines, 'model ' .. st.model .. origin .. (st.modelPresent and '' or ' (not installed)'))
        table.insert(lines, 'Ollama ' .. st.ollama .. (st.ollamaVersion and (' ' .. st.ollamaVersion) or '') .. ' at ' .. st.ollamaHost)
        if st.problem then
          table.insert(lines, st.problem)
        end
        local ws = st.workspace
        if ws then
          local head = ws.commit and (', HEAD ' .. ws.commit:sub(1, 12) .. (ws.branch and ws.branch ~= '' and (' on ' .. ws.branch) or ' (detached)')) or ''
          if ws.watching then
            local n = ws.folders or 0
            table.insert(lines, 'workspace: watching ' .. n .. (n == 1 and ' folder' or ' folders') .. ', next copy ' .. (ws.ready and 'ready' or 'being made') .. head)
          else
            table.insert(lines, 'workspace: not watched (' .. (ws.why or 'unknown reason') .. '); each run compares the folder' .. head)
          end
        end
        if type(st.fineTuning) == 'table' then
          table.insert(lines, M.finetune_line(st.fineTuning))
        end
      end
    end
    for _, msg in pairs(M.progress) do
      table.insert(lines, 'running: ' .. msg)
    end
    vim.notify('FrogNano: ' .. table.concat(lines, '; '), vim.log.levels.INFO)
  else
    vim.notify('FrogNano: unknown subcommand ' .. sub .. ' (' .. table.concat(M.subcommands, ', ') .. ')', vim.log.levels.ERROR)
  end
end

return M
