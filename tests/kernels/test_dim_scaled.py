import math

import torch
from botorch.models.utils.gpytorch_modules import (
    get_covar_module_with_dim_scaled_prior,
    get_matern_kernel_with_gamma_prior,
)
from botorch.utils.testing import BotorchTestCase
from gpytorch.kernels import RBFKernel, ScaleKernel
from gpytorch.priors import GammaPrior, LogNormalPrior

from botorch_ext.kernels import get_isotropic_rbf_kernel_with_dim_scaled_prior


class TestIsotropicKernel(BotorchTestCase):
    def test_priors_are_botorchs(self):
        for d in (1, 6, 60):
            kernel = get_isotropic_rbf_kernel_with_dim_scaled_prior(d)
            self.assertIsInstance(kernel, ScaleKernel)
            base = kernel.base_kernel
            self.assertIsInstance(base, RBFKernel)
            self.assertIsNone(base.ard_num_dims)
            ref = get_covar_module_with_dim_scaled_prior(ard_num_dims=d)
            prior = base.lengthscale_prior
            self.assertIsInstance(prior, LogNormalPrior)
            # The closed form of BoTorch's prior, and BoTorch's object itself.
            self.assertAlmostEqual(
                prior.loc.item(), math.sqrt(2) + 0.5 * math.log(d), places=5
            )
            self.assertAlmostEqual(prior.scale.item(), math.sqrt(3))
            self.assertTrue(torch.equal(prior.loc, ref.lengthscale_prior.loc))
            self.assertTrue(torch.equal(prior.scale, ref.lengthscale_prior.scale))
            # Starts at the prior's mode exp(mu - sigma^2), above BoTorch's floor.
            mode = math.exp(math.sqrt(2) + 0.5 * math.log(d) - 3)
            self.assertAlmostEqual(base.lengthscale.item(), mode, places=5)
            floor = ref.raw_lengthscale_constraint.lower_bound.item()
            self.assertEqual(base.raw_lengthscale_constraint.lower_bound.item(), floor)
            self.assertAlmostEqual(floor, 0.025)
            # The floor holds for any raw value (a softplus transform).
            base.raw_lengthscale.data.fill_(-50.0)
            self.assertGreaterEqual(base.lengthscale.item(), floor)
            out_prior = kernel.outputscale_prior
            self.assertIsInstance(out_prior, GammaPrior)
            ref_out = get_matern_kernel_with_gamma_prior(ard_num_dims=1)
            self.assertTrue(
                torch.equal(
                    out_prior.concentration, ref_out.outputscale_prior.concentration
                )
            )
            self.assertEqual(out_prior.concentration.item(), 2.0)
            self.assertAlmostEqual(out_prior.rate.item(), 0.15)

    def test_without_outputscale_and_values(self):
        kernel = get_isotropic_rbf_kernel_with_dim_scaled_prior(
            3, use_outputscale=False
        )
        self.assertIsInstance(kernel, RBFKernel)
        for dtype in (torch.float, torch.double):
            kernel = kernel.to(dtype)
            x = torch.rand(5, 3, dtype=dtype)
            ell = kernel.lengthscale.item()
            expected = torch.exp(-torch.cdist(x, x).pow(2) / (2 * ell**2))
            atol = 1e-5 if dtype == torch.float else 1e-10
            torch.testing.assert_close(
                kernel(x).to_dense(), expected, atol=atol, rtol=atol
            )

    def test_bad_input(self):
        for bad in (0, -2, 1.5):
            with self.assertRaisesRegex(ValueError, "`d`"):
                get_isotropic_rbf_kernel_with_dim_scaled_prior(bad)


class TestARDKernel(BotorchTestCase):
    def test_botorchs_kernel_with_a_softplus_floor(self):
        from botorch_ext.kernels import get_ard_rbf_kernel_with_dim_scaled_prior

        for d in (2, 6):
            kernel = get_ard_rbf_kernel_with_dim_scaled_prior(d)
            ref = get_covar_module_with_dim_scaled_prior(ard_num_dims=d)
            self.assertEqual(kernel.ard_num_dims, d)
            torch.testing.assert_close(kernel.lengthscale, ref.lengthscale)
            self.assertTrue(
                torch.equal(kernel.lengthscale_prior.loc, ref.lengthscale_prior.loc)
            )
            # BoTorch's floor has no transform; this one a softplus, same bound.
            self.assertIsNone(ref.raw_lengthscale_constraint._transform)
            self.assertIsNotNone(kernel.raw_lengthscale_constraint._transform)
            self.assertEqual(
                kernel.raw_lengthscale_constraint.lower_bound.item(),
                ref.raw_lengthscale_constraint.lower_bound.item(),
            )
            kernel.raw_lengthscale.data.fill_(-50.0)
            self.assertTrue((kernel.lengthscale >= 0.025 - 1e-7).all())
