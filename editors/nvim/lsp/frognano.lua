-- The configuration of the frognano language server for Neovim 0.11+'s vim.lsp.config:
-- `vim.lsp.enable('frognano')` starts it for Go, Python, TypeScript and JavaScript buffers
-- with the plugin's progress messages and preview. Change it with
-- `vim.lsp.config('frognano', { settings = { frognano = { model = '...' } } })`, or use
-- require('frognano').setup({...}), which works on every version (not both at once).
local config = require('frognano').lsp_config()
return config
