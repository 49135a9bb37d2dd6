// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Minimal smart-contract wallet with one owner key (ERC-1271).
/// @notice `isValidSignature(hash, sig)` answers the ERC-1271 magic value 0x1626ba7e when
///         `ecrecover(hash, sig) == owner`, so whatever the owner signs (an EIP-191 SIWE message
///         hash included) is a valid signature of the wallet.
contract Wallet {
    bytes4 internal constant MAGIC_VALUE = 0x1626ba7e;
    bytes4 internal constant INVALID = 0xffffffff;
    // secp256k1n / 2: signatures with a higher s are malleable copies and refused.
    uint256 internal constant HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    receive() external payable {}

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return INVALID;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        if (uint256(s) > HALF_N || (v != 27 && v != 28)) return INVALID;
        address signer = ecrecover(hash, v, r, s);
        return signer != address(0) && signer == owner ? MAGIC_VALUE : INVALID;
    }

    /// @notice Lets the owner move what the wallet holds (tokens, ether).
    function execute(address to, uint256 value, bytes calldata data) external returns (bytes memory) {
        require(msg.sender == owner, "Wallet: not owner");
        (bool ok, bytes memory result) = to.call{value: value}(data);
        if (!ok) {
            assembly {
                revert(add(result, 32), mload(result))
            }
        }
        return result;
    }
}
