-- frognano: a local coding agent behind LSP code actions. Configure with
-- require('frognano').setup({...}); this file only defines the :FrogNano command.
if vim.g.loaded_frognano then
  return
end
vim.g.loaded_frognano = true

vim.api.nvim_create_user_command('FrogNano', function(opts)
  require('frognano').command(opts.fargs)
end, {
  nargs = '*',
  range = true,
  complete = function()
    return { 'ask', 'fix', 'explain', 'tests', 'cancel', 'status' }
  end,
  desc = 'FrogNano: ask | fix | explain | tests | cancel | status',
})
