-- Optional preview of FrogNano's change: the server's workspace/applyEdit is shown as a
-- unified diff in a scratch buffer, and applied only if the user accepts. Without the
-- preview option the edit goes to Neovim's own handler unchanged.
local M = {}

local function lines_of(uri)
  local bufnr = vim.uri_to_bufnr(uri)
  if vim.api.nvim_buf_is_loaded(bufnr) then
    return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  end
  local path = vim.uri_to_fname(uri)
  if vim.fn.filereadable(path) == 1 then
    return vim.fn.readfile(path)
  end
  return {}
end

-- The text of a document after its edits, computed on a scratch copy.
local function after_edits(uri, edits, encoding)
  local scratch = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(scratch, 0, -1, false, lines_of(uri))
  vim.lsp.util.apply_text_edits(edits, scratch, encoding)
  local out = vim.api.nvim_buf_get_lines(scratch, 0, -1, false)
  vim.api.nvim_buf_delete(scratch, { force = true })
  return out
end

--- The diff of a WorkspaceEdit, as lines.
function M.diff(edit, encoding)
  local out = {}
  local function add_diff(uri, before, after)
    local name = vim.fn.fnamemodify(vim.uri_to_fname(uri), ':.')
    local sep = name:sub(1, 1) == '/' and '' or '/'
    table.insert(out, '--- a' .. sep .. name)
    table.insert(out, '+++ b' .. sep .. name)
    local d = vim.diff(table.concat(before, '\n') .. '\n', table.concat(after, '\n') .. '\n', { result_type = 'unified' })
    vim.list_extend(out, vim.split(d, '\n', { trimempty = true }))
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind == 'create' then
      table.insert(out, 'create ' .. vim.fn.fnamemodify(vim.uri_to_fname(change.uri), ':.'))
    elseif change.kind == 'delete' then
      table.insert(out, 'delete ' .. vim.fn.fnamemodify(vim.uri_to_fname(change.uri), ':.'))
    elseif change.kind == 'rename' then
      table.insert(out, 'rename ' .. vim.uri_to_fname(change.oldUri) .. ' -> ' .. vim.uri_to_fname(change.newUri))
    elseif change.textDocument then
      local uri = change.textDocument.uri
      add_diff(uri, lines_of(uri), after_edits(uri, change.edits, encoding))
    end
  end
  for uri, edits in pairs(edit.changes or {}) do
    add_diff(uri, lines_of(uri), after_edits(uri, edits, encoding))
  end
  return out
end

--- Asks the user; replaced in tests. Returns true to apply.
function M.confirm(title)
  return vim.fn.confirm('Apply ' .. title .. '?', '&Apply\n&Reject', 1) == 1
end

--- The workspace/applyEdit handler installed by frognano.attach.
function M.handler(err, params, ctx, config)
  local default = vim.lsp.handlers['workspace/applyEdit']
  if not require('frognano').options.preview then
    return default(err, params, ctx, config)
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = client and client.offset_encoding or 'utf-16'
  local title = params.label or 'FrogNano\'s change'
  local diff = M.diff(params.edit, encoding)
  vim.cmd('botright new')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = 'diff'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.list_extend({ '# ' .. title }, diff))
  vim.bo[buf].modifiable = false
  M.last = diff
  vim.cmd('redraw')
  local accepted = M.confirm(title)
  vim.api.nvim_buf_delete(buf, { force = true })
  if not accepted then
    return { applied = false, failureReason = 'rejected in the preview' }
  end
  return default(err, params, ctx, config)
end

return M
