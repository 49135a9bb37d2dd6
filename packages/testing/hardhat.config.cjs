// The in-process test chain (src/fakes/chain.ts). Hardhat never compiles here:
// contracts are compiled by contracts/compile.mjs into contracts/artifacts.json.
// Chain id 8453 stands in for the gating network (Base); keys are hardhat's default accounts.
module.exports = {
  networks: {
    hardhat: {
      chainId: 8453,
      hardfork: 'cancun',
      // Real time, one block per transaction.
      mining: { auto: true },
      loggingEnabled: false,
    },
  },
  paths: { sources: './contracts' },
};
