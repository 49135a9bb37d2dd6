// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Wallet} from "./Wallet.sol";

/// @title CREATE2 factory of `Wallet`: the address of a wallet is known before it is deployed,
///        which is what an ERC-6492 (counterfactual) signature relies on.
contract WalletFactory {
    event WalletDeployed(address indexed wallet, address indexed owner, bytes32 salt);

    /// @notice Deploys the wallet of (owner, salt); answers its address if it already exists.
    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        wallet = getAddress(owner, salt);
        if (wallet.code.length > 0) return wallet;
        Wallet deployed = new Wallet{salt: salt}(owner);
        require(address(deployed) == wallet, "WalletFactory: address mismatch");
        emit WalletDeployed(wallet, owner, salt);
    }

    function getAddress(address owner, bytes32 salt) public view returns (address) {
        bytes32 initCodeHash = keccak256(abi.encodePacked(type(Wallet).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, initCodeHash)))));
    }
}
