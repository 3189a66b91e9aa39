-- The few Neovim APIs that changed between 0.7 and today, behind one function each: the
-- current API where it exists (no deprecation warnings on 0.10+), the 0.7 one otherwise.
local M = {}

-- 0.11 made client methods take self (client:request); the closures that 0.7-0.10 call with
-- a dot are deprecated there.
local methods = vim.fn.has('nvim-0.11') == 1

--- The frognano clients: those attached to bufnr, or all when bufnr is nil.
---@param bufnr integer|nil
function M.clients(bufnr)
  if vim.lsp.get_clients then -- 0.10+
    return vim.lsp.get_clients({ bufnr = bufnr, name = 'frognano' })
  end
  local out = {}
  local all = bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()
  for _, c in pairs(all) do
    if c.name == 'frognano' then
      table.insert(out, c)
    end
  end
  return out
end

function M.request(client, method, params, handler, bufnr)
  if methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.request_sync(client, method, params, timeout_ms, bufnr)
  if methods then
    return client:request_sync(method, params, timeout_ms, bufnr)
  end
  return client.request_sync(method, params, timeout_ms, bufnr)
end

function M.is_stopped(client)
  if methods then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- The LSP diagnostics on the cursor's line, for a code action request. vim.diagnostic
--- (0.6+) replaces vim.lsp.diagnostic.get_line_diagnostics; 0.10+ keeps the server's own
--- diagnostic in user_data.lsp, earlier versions only part of it, so the rest is rebuilt
--- (columns of other sources are bytes: close enough to name the line).
function M.line_diagnostics(bufnr)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr, { lnum = row })) do
    local lsp = d.user_data and d.user_data.lsp
    if lsp and lsp.range and lsp.message then
      table.insert(out, lsp)
    else
      table.insert(out, {
        range = {
          start = { line = d.lnum, character = d.col },
          ['end'] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
        },
        severity = d.severity,
        message = d.message,
        source = d.source,
        code = d.code,
      })
    end
  end
  return out
end

--- Range parameters for the cursor, or for range ({start, end} marks), in the client's
--- position encoding (0.11 warns when it is not given).
function M.range_params(client, bufnr, range)
  local encoding = client.offset_encoding or 'utf-16'
  if range then
    return vim.lsp.util.make_given_range_params(range[1], range[2], bufnr, encoding)
  end
  return vim.lsp.util.make_range_params(0, encoding)
end

--- vim.validate in the form of the running version: 0.11 takes (name, value, validator,
--- optional, message) and deprecates the table form that 0.7 alone knows.
function M.validate(name, value, validator, optional, message)
  if vim.fn.has('nvim-0.11') == 1 then
    vim.validate(name, value, validator, optional, message)
  elseif type(validator) == 'function' then
    vim.validate({ [name] = { value, function(v)
      return (optional and v == nil) or validator(v)
    end, message } })
  else
    vim.validate({ [name] = { value, validator, optional } })
  end
end

return M
