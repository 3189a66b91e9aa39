-- frognano: a local coding agent behind LSP code actions. Configure with
-- require('frognano').setup({...}) (or, on Neovim 0.11+, vim.lsp.enable('frognano')); this file
-- only defines the :FrogNano command.
if vim.g.loaded_frognano then
  return
end
vim.g.loaded_frognano = true

vim.api.nvim_create_user_command('FrogNano', function(opts)
  require('frognano').command(opts.fargs)
end, {
  nargs = '*',
  range = true,
  complete = function(arglead, cmdline)
    -- The first argument is a subcommand; finetune takes one more (ask's are the instruction).
    local frognano = require('frognano')
    local words = frognano.subcommands
    if cmdline:match('^%S+%s+finetune%s+%S*$') then
      words = frognano.finetune_subcommands
    elseif cmdline:match('^%S+%s+%S+%s') then
      return {}
    end
    return vim.tbl_filter(function(sub)
      return sub:sub(1, #arglead) == arglead
    end, words)
  end,
  desc = 'FrogNano: ask | fix | implement | tests | explain | cancel | status | finetune start|stop|report',
})
